package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// authenticate resolves the bearer key of r and records the caller in the
// request info.
func (s *Server) authenticate(r *http.Request) error {
	token, err := httpx.BearerToken(r)
	if err != nil {
		return err
	}
	return s.authenticateKey(r, token)
}

// authenticateQuery is authenticate for event streams, which browsers'
// EventSource opens without headers: with no Authorization header, the
// key may come as ?api_key= (as in the reference). It is never forwarded.
func (s *Server) authenticateQuery(r *http.Request) error {
	if r.Header.Get("Authorization") == "" && r.URL.Query().Has("api_key") {
		return s.authenticateKey(r, r.URL.Query().Get("api_key"))
	}
	return s.authenticate(r)
}

// authenticateKey resolves an API key and records the caller in the
// request info.
func (s *Server) authenticateKey(r *http.Request, token string) error {
	if !model.ValidAPIKey(token) {
		if authn.LooksLikeJWT(token) {
			return errTokenNotKey
		}
		return httpx.ErrInvalidKey
	}
	ctx := r.Context()
	key, acct, err := authz.AuthenticateKey(ctx, s.store, token, s.now())
	if err != nil {
		return err
	}
	ri := authz.From(ctx)
	ri.Account, ri.Key = acct, key
	s.touches.touch(key, s.now())
	return nil
}

// touchInterval is how stale last_used_at may get: writing it on every
// request would put a database write on the hot path.
const touchInterval = time.Minute

type keyTouch struct {
	keyID string
	at    time.Time
}

// keyToucher queues last_used_at updates for Run to write, at most one per
// key per touchInterval. When nothing drains the queue (Run not running,
// or a slow store) touches are dropped, never waited for.
type keyToucher struct {
	ch   chan keyTouch
	mu   sync.Mutex
	last map[string]time.Time // key id → last queued touch
}

func newKeyToucher() *keyToucher {
	return &keyToucher{ch: make(chan keyTouch, 64), last: map[string]time.Time{}}
}

func (t *keyToucher) touch(k *model.APIKey, now time.Time) {
	if k.LastUsedAt != nil && now.Sub(*k.LastUsedAt) < touchInterval {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.last[k.ID]; ok && now.Sub(last) < touchInterval {
		return
	}
	select {
	case t.ch <- keyTouch{keyID: k.ID, at: now}:
		t.last[k.ID] = now
	default:
	}
}

// bootstrap registers Config.BootstrapAPIKey as an admin key of the
// bootstrap account, creating the account on first start.
func (s *Server) bootstrap(ctx context.Context) error {
	key := s.cfg.BootstrapAPIKey
	if key == "" {
		return nil
	}
	if !model.ValidAPIKey(key) {
		return errors.New("bootstrap api key is malformed: want bxk_live_ followed by 43 url-safe base64 characters")
	}
	now := s.now()
	acct, k, err := s.store.EnsureAccountKey(ctx,
		&model.Account{ID: model.NewID(), Email: s.cfg.BootstrapEmail, CreatedAt: now},
		&model.APIKey{ID: model.NewID(), Name: "bootstrap", Hash: model.HashAPIKey(key), Prefix: model.DisplayPrefix(key), Role: model.RoleAdmin, CreatedAt: now})
	if errors.Is(err, model.ErrConflict) {
		return fmt.Errorf("bootstrap api key is registered to another account than %s", s.cfg.BootstrapEmail)
	}
	if err != nil {
		return fmt.Errorf("register bootstrap api key: %w", err)
	}
	if k.RevokedAt != nil {
		// Resurrecting a key someone revoked would undo the revocation.
		return errors.New("the bootstrap api key was revoked; generate a new one")
	}
	s.log.InfoContext(ctx, "bootstrap api key registered", "account", acct.ID, "email", acct.Email, "key_prefix", k.Prefix)
	return nil
}
