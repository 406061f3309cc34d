package preview

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// ControlPlane is what previews need of the control plane.
type ControlPlane interface {
	// Sidecar returns a round tripper to the sidecar of the account's
	// sandbox that sets the sidecar's token on every request, if the
	// sandbox is active; otherwise the *api.Error to answer (404 for
	// another account's).
	Sidecar(ctx context.Context, accountID, sandboxID string) (http.RoundTripper, error)
	// Audit appends an entry to the sandbox's audit log.
	Audit(ctx context.Context, accountID, sandboxID, operation string, detail map[string]any) error
}

// Config configures a Service.
type Config struct {
	// BaseURL is where host-based previews are served: scheme and domain,
	// e.g. "https://preview.example.com" makes
	// https://8080-<id>.preview.example.com. "" means the request's
	// scheme, "localhost" and the request's port (local mode: *.localhost
	// resolves to loopback).
	BaseURL string
	// PerSandbox and PerAccount bound proxied requests per minute;
	// 0 means 1200 and 3000.
	PerSandbox, PerAccount int
	// FlushInterval is how often request counts go to the audit log;
	// 0 means a minute.
	FlushInterval time.Duration
	Log           *slog.Logger
	Now           func() time.Time
}

// Service creates, revokes and serves previews.
type Service struct {
	store Store
	cp    ControlPlane
	cfg   Config
	base  *url.URL // parsed cfg.BaseURL; nil for the default
	log   *slog.Logger
	now   func() time.Time

	mu     sync.Mutex
	cache  map[string]cached                      // token hash → record, for cacheTTL
	counts map[string]*usageCount                 // preview id → requests since the last flush
	open   map[string]map[*int]context.CancelFunc // preview id → its requests in flight
	limit  *limiter
}

type cached struct {
	rec  *Record
	till time.Time
}

type usageCount struct {
	rec *Record
	n   int
}

// cacheTTL bounds how long a token lookup is reused: a revocation by
// another server sharing the database takes effect within it (this
// server's own at once).
const cacheTTL = 2 * time.Second

// New returns a Service.
func New(store Store, cp ControlPlane, cfg Config) (*Service, error) {
	s := &Service{store: authorized{store}, cp: cp, cfg: cfg, log: cfg.Log, now: cfg.Now, cache: map[string]cached{}, counts: map[string]*usageCount{}, open: map[string]map[*int]context.CancelFunc{}}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("preview base URL %q: want scheme://domain[:port]", cfg.BaseURL)
		}
		s.base = u
	}
	if s.cfg.PerSandbox == 0 {
		s.cfg.PerSandbox = 1200
	}
	if s.cfg.PerAccount == 0 {
		s.cfg.PerAccount = 3000
	}
	if s.cfg.FlushInterval == 0 {
		s.cfg.FlushInterval = time.Minute
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.limit = newLimiter(s.now)
	return s, nil
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "bxp_" + base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ServeCreate serves POST /v1/sandboxes/{id}/preview/{port} for the
// account's active sandbox (the caller checked it).
func (s *Service) ServeCreate(w http.ResponseWriter, r *http.Request, accountID, sandboxID string) error {
	port, err := parsePort(r.PathValue("port"))
	if err != nil {
		return err
	}
	if e2bPorts[port] {
		return httpx.Invalid("port", fmt.Sprintf("port %d is the E2B facade's (envd), not an app's", port), "serve the app on another port")
	}
	if port == egressPort {
		return httpx.Invalid("port", fmt.Sprintf("port %d is the sandbox's egress proxy, which a preview never reaches", port), "serve the app on another port")
	}
	var req api.CreatePreviewRequest
	if err := httpx.DecodeJSON(w, r, &req, 1<<10); err != nil {
		return err
	}
	ttl := req.TTLSeconds
	if ttl == 0 {
		ttl = api.DefaultPreviewTTL
	}
	if ttl < api.MinPreviewTTL || ttl > api.MaxPreviewTTL {
		return httpx.Invalid("ttl_seconds", fmt.Sprintf("ttl_seconds must be %d to %d", api.MinPreviewTTL, api.MaxPreviewTTL), "")
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	token := newToken()
	rec := &Record{
		ID: newID(), AccountID: accountID, SandboxID: sandboxID, Port: port, TokenHash: hashToken(token),
		CreatedAt: now, ExpiresAt: now.Add(time.Duration(ttl) * time.Second),
	}
	if err := s.store.CreatePreview(r.Context(), rec); err != nil {
		return fmt.Errorf("create preview: %w", err)
	}
	if err := s.cp.Audit(r.Context(), accountID, sandboxID, "preview_create", map[string]any{
		"preview_id": rec.ID, "port": port, "expires_at": rec.ExpiresAt.Format(time.RFC3339),
	}); err != nil {
		return err
	}
	out := rec.ToAPI()
	out.Token = token
	out.URL, out.PathURL = s.urls(r, sandboxID, port, token)
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// ServeList serves GET /v1/sandboxes/{id}/previews: the live previews.
func (s *Service) ServeList(w http.ResponseWriter, r *http.Request, accountID, sandboxID string) error {
	rs, err := s.store.Previews(r.Context(), accountID, sandboxID)
	if err != nil {
		return fmt.Errorf("list previews: %w", err)
	}
	out := []api.Preview{}
	now := s.now()
	for _, rec := range rs {
		if rec.Live(now) {
			out = append(out, rec.ToAPI())
		}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ServeRevoke serves DELETE /v1/sandboxes/{id}/preview/{port}: every live
// preview of the port ends at once.
func (s *Service) ServeRevoke(w http.ResponseWriter, r *http.Request, accountID, sandboxID string) error {
	port, err := parsePort(r.PathValue("port"))
	if err != nil {
		return err
	}
	rs, err := s.store.RevokePreviews(r.Context(), accountID, sandboxID, port, s.now().UTC())
	if err != nil {
		return fmt.Errorf("revoke previews: %w", err)
	}
	if len(rs) == 0 {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "no live preview of port %d", port).
			WithHint("list them with GET /v1/sandboxes/{id}/previews")
	}
	ids := make([]string, len(rs))
	s.mu.Lock()
	for i, rec := range rs {
		ids[i] = rec.ID
		delete(s.cache, rec.TokenHash)
		for _, cancel := range s.open[rec.ID] {
			cancel() // its WebSockets and streams end now
		}
	}
	s.mu.Unlock()
	s.flush(r.Context(), ids...)
	if err := s.cp.Audit(r.Context(), accountID, sandboxID, "preview_revoke", map[string]any{"port": port, "previews": ids}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, &api.Error{
			Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: fmt.Sprintf("port %q is not 1 to 65535", s),
			Hint:    "name the port the app listens on inside the sandbox, e.g. 8080",
			Details: []api.FieldError{{Loc: []string{"path", "port"}, Msg: "not a port", Type: "value_error"}},
		}
	}
	return n, nil
}

// urls returns a preview's host-based and path URLs, as r (the create
// request) reached the server.
func (s *Service) urls(r *http.Request, sandboxID string, port int, token string) (string, string) {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	q := "?" + api.PreviewTokenParam + "=" + url.QueryEscape(token)
	pathURL := fmt.Sprintf("%s://%s/preview/%s/%d/%s", scheme, r.Host, sandboxID, port, q)
	label := fmt.Sprintf("%d-%s", port, sandboxID)
	if s.base != nil {
		return fmt.Sprintf("%s://%s.%s/%s", s.base.Scheme, label, s.base.Host, q), pathURL
	}
	host := "localhost"
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		host = net.JoinHostPort(host, p)
	}
	return fmt.Sprintf("%s://%s.%s/%s", scheme, label, host, q), pathURL
}

// domain is the host name host-based previews are served under.
func (s *Service) domain() string {
	if s.base != nil {
		return strings.ToLower(s.base.Hostname())
	}
	return "localhost"
}

// lookup returns the live preview token names, or nil.
func (s *Service) lookup(ctx context.Context, token string) (*Record, error) {
	if token == "" {
		return nil, nil
	}
	h := hashToken(token)
	now := s.now()
	s.mu.Lock()
	c, ok := s.cache[h]
	s.mu.Unlock()
	if ok && now.Before(c.till) {
		if !c.rec.Live(now) {
			return nil, nil
		}
		return c.rec, nil
	}
	rec, err := s.store.PreviewByTokenHash(ctx, h)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up preview: %w", err)
	}
	s.mu.Lock()
	if len(s.cache) > 10000 {
		clear(s.cache) // a bound, not an eviction policy: misses only cost a query
	}
	s.cache[h] = cached{rec: rec, till: now.Add(cacheTTL)}
	s.mu.Unlock()
	if !rec.Live(now) {
		return nil, nil
	}
	return rec, nil
}

// recheckInterval is how often a request in flight (a WebSocket, a
// stream) checks that its preview is still live: expiry, and revocation
// by another server, end it within this; this server's revocation ends
// it at once.
const recheckInterval = cacheTTL

// hold returns the context a proxied request of rec, made with token,
// runs under: it is cancelled when the preview is revoked here, and
// within recheckInterval when it expires or is revoked elsewhere. done
// must be called when the request ends.
func (s *Service) hold(ctx context.Context, rec *Record, token string) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancel(ctx)
	key := new(int)
	s.mu.Lock()
	if s.open[rec.ID] == nil {
		s.open[rec.ID] = map[*int]context.CancelFunc{}
	}
	s.open[rec.ID][key] = cancel
	s.mu.Unlock()
	go func() {
		t := time.NewTicker(recheckInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// A store error keeps the request: only a known end ends it.
				if live, err := s.lookup(ctx, token); err == nil && live == nil {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel()
		s.mu.Lock()
		delete(s.open[rec.ID], key)
		if len(s.open[rec.ID]) == 0 {
			delete(s.open, rec.ID)
		}
		s.mu.Unlock()
	}
}

// count records one proxied request of rec, for the audit log.
func (s *Service) count(rec *Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.counts[rec.ID]
	if !ok {
		c = &usageCount{rec: rec}
		s.counts[rec.ID] = c
	}
	c.n++
}

// Run writes request counts to the audit log every FlushInterval until
// ctx is done, then once more.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			s.flush(ctx)
		}
	}
}

// flush writes a preview_requests entry for each preview with requests
// counted (only those of ids, when given).
func (s *Service) flush(ctx context.Context, ids ...string) {
	s.mu.Lock()
	var out []*usageCount
	for id, c := range s.counts {
		if len(ids) > 0 && !contains(ids, id) {
			continue
		}
		out = append(out, c)
		delete(s.counts, id)
	}
	s.mu.Unlock()
	for _, c := range out {
		err := s.cp.Audit(ctx, c.rec.AccountID, c.rec.SandboxID, "preview_requests", map[string]any{
			"preview_id": c.rec.ID, "port": c.rec.Port, "requests": c.n,
		})
		if err != nil {
			s.log.WarnContext(ctx, "audit preview requests", "preview", c.rec.ID, "err", err)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
