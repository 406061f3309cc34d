package takeover

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// tokenTypeTakeover is the "type" claim of takeover tokens, so an access
// token can never open a terminal and a takeover token never logs in.
const tokenTypeTakeover = "sandbox_takeover"

// takeoverClaims are the claims of a takeover token: bound to one
// sandbox, single-use (jti), short-lived.
type takeoverClaims struct {
	Type     string `json:"type"`
	Sub      string `json:"sub"` // account id
	Sandbox  string `json:"sbx"`
	ReadOnly bool   `json:"ro,omitempty"`
	KeyID    string `json:"kid"`   // the API key or SSH key that minted it
	KeyName  string `json:"kname"` // its name, for the audit log
	Via      string `json:"via"`   // viaAPIKey or viaSSHKey
	// KeyExp is when the API key that minted it expires, in Unix
	// microseconds; 0: never.
	KeyExp int64 `json:"kexp,omitempty"`
	// KeyDem is the minting API key's count of demotions
	// (model.APIKey.Demotions) then: the token is refused once the key's
	// count is past it, even if its holder was promoted back since.
	KeyDem int64  `json:"kdem,omitempty"`
	Jti    string `json:"jti"`
	authn.Times
}

// One answer for every bad token (expired, used, forged, another
// sandbox's), as the reference does: a guesser learns nothing.
var errBadTakeoverToken = &api.Error{
	Status: http.StatusUnauthorized, Code: api.CodeInvalidToken,
	Message: "invalid, expired or already used takeover token",
	Hint:    "mint a new one with `boxkite ssh` or POST /v1/sandboxes/{id}/takeover-token; a token lasts 30 s and opens one session",
}

// mintTakeoverToken signs a token for sb granting g.
func (s *Service) mintTakeoverToken(ctx context.Context, accountID, sandboxID string, g authz.Grant) (api.TakeoverToken, error) {
	key, err := s.d.JWTKey(ctx)
	if err != nil {
		return api.TakeoverToken{}, err
	}
	now := s.d.Now()
	exp := now.Add(api.TakeoverTokenTTL)
	tok, err := authn.SignToken(key, takeoverClaims{
		Type: tokenTypeTakeover, Sub: accountID, Sandbox: sandboxID, ReadOnly: g.ReadOnly,
		KeyID: g.KeyID, KeyName: g.KeyName, Via: g.Via, KeyExp: keyExp(g.KeyExpiresAt), KeyDem: g.KeyDemotions, Jti: model.NewID(),
		Times: authn.Times{Iat: now.Unix(), Exp: exp.Unix()},
	})
	if err != nil {
		return api.TakeoverToken{}, err
	}
	return api.TakeoverToken{Token: tok, ExpiresAt: time.Unix(exp.Unix(), 0).UTC(), ReadOnly: g.ReadOnly}, nil
}

// keyExp is a key's expiry as the claim kexp: Unix microseconds, 0 for none.
func keyExp(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UnixMicro()
}

// grant is what c grants.
func (c takeoverClaims) grant() authz.Grant {
	g := authz.Grant{KeyID: c.KeyID, KeyName: c.KeyName, KeyDemotions: c.KeyDem, Via: c.Via, ReadOnly: c.ReadOnly}
	if c.KeyExp != 0 {
		t := time.UnixMicro(c.KeyExp).UTC()
		g.KeyExpiresAt = &t
	}
	return g
}

// parseTakeoverToken verifies token for the sandbox sandboxID and spends it.
func (s *Service) parseTakeoverToken(ctx context.Context, token, sandboxID string) (takeoverClaims, error) {
	var c takeoverClaims
	key, err := s.d.JWTKey(ctx)
	if err != nil {
		return c, err
	}
	now := s.d.Now()
	if err := authn.VerifyToken(key, token, &c, now); err != nil {
		return c, errBadTakeoverToken
	}
	if c.Type != tokenTypeTakeover || c.Sub == "" || c.Jti == "" || c.Sandbox != sandboxID {
		return c, errBadTakeoverToken
	}
	// A token dies with the key that minted it (issue 17, finding 3).
	valid, err := s.d.CredentialValid(ctx, c.KeyID)
	if err != nil {
		return c, fmt.Errorf("check the token's key: %w", err)
	}
	if !valid {
		return c, errBadTakeoverToken
	}
	// Only an admin key mints one, and it must be one still, never
	// demoted since: a demotion ends the tokens its keys minted, as a
	// removal does, and a promotion back does not revive them.
	if c.Via == authz.ViaAPIKey {
		role, demotions, err := s.d.KeyRole(ctx, c.KeyID)
		if err != nil {
			return c, fmt.Errorf("check the token's key: %w", err)
		}
		if role != model.RoleAdmin || demotions != c.KeyDem {
			return c, errBadTakeoverToken
		}
	}
	fresh, err := s.d.Store.SpendToken(ctx, c.Jti, time.Unix(c.Exp, 0), now)
	if err != nil {
		return c, fmt.Errorf("spend takeover token: %w", err)
	}
	if !fresh {
		return c, errBadTakeoverToken
	}
	return c, nil
}

// AuthenticateTakeover serves the routes a takeover token opens: the
// terminal (WS …/takeover, token in ?token= or the header) and, for the
// bastion's `ssh id@host cmd`, exec (header only). An API key works as
// everywhere else, and on a GET (the WebSocket routes) as ?api_key= too.
func (s *Service) AuthenticateTakeover(r *http.Request) error {
	var token string
	q, fromQuery := r.URL.Query(), r.Header.Get("Authorization") == "" && r.Method == http.MethodGet
	switch {
	case fromQuery && q.Has("token"):
		token = q.Get("token")
	case fromQuery && q.Has("api_key"):
		// The WebSocket routes' ?api_key= (httpx.AuthKeyQuery): a
		// browser's WebSocket cannot send the header. A key only.
		return s.d.AuthenticateKey(r, q.Get("api_key"))
	default:
		t, err := httpx.BearerToken(r)
		if err != nil {
			return err
		}
		token = t
	}
	// Only a JWT (header.claims.signature) can be a takeover token; anything
	// else, a mistyped key above all, is refused as the API key it is meant
	// to be, not as a bad takeover token.
	if model.ValidAPIKey(token) || strings.Count(token, ".") != 2 {
		return s.d.AuthenticateKey(r, token)
	}
	ctx := r.Context()
	c, err := s.parseTakeoverToken(ctx, token, r.PathValue("id"))
	if err != nil {
		return err
	}
	acct, err := s.d.Store.AccountByID(ctx, c.Sub)
	if errors.Is(err, model.ErrNotFound) {
		return errBadTakeoverToken
	}
	if err != nil {
		return fmt.Errorf("look up account: %w", err)
	}
	if r.Method != http.MethodGet && c.ReadOnly {
		return authz.ErrReadOnlyExec
	}
	ri := authz.From(ctx)
	ri.Account = acct
	g := c.grant()
	g.Token = true
	ri.Grant = &g
	return nil
}

// createTakeoverToken serves POST /v1/sandboxes/{id}/takeover-token:
// admin keys only, as for the header-authenticated takeover.
func (s *Service) createTakeoverToken(w http.ResponseWriter, r *http.Request) error {
	key := authz.From(r.Context()).Key
	if key.Role != model.RoleAdmin {
		return errTakeoverNotPermitted
	}
	var req api.TakeoverTokenRequest
	if r.ContentLength != 0 {
		if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
			return err
		}
	}
	sb, err := s.loadAudited(r)
	if err != nil {
		return err
	}
	g := authz.Grant{KeyID: key.ID, KeyName: key.Name, KeyExpiresAt: key.ExpiresAt, KeyDemotions: key.Demotions, Via: authz.ViaAPIKey, ReadOnly: req.ReadOnly}
	tok, err := s.mintTakeoverToken(r.Context(), sb.AccountID, sb.ID, g)
	if err != nil {
		return err
	}
	// A token whose minting is not on record is never handed out.
	if err := s.d.Audit.Append(r.Context(), audit.Record{
		Sandbox: sb, Source: api.LogSourceHumanTakeover, Operation: "takeover_token_mint", Detail: g.Detail(), Started: s.d.Now(),
	}); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, tok)
	return nil
}

// AuthenticateBastion checks the bastion's key (Config.BastionKey) in
// constant time. Without one configured the bastion routes are closed.
func (s *Service) AuthenticateBastion(r *http.Request) error {
	token, err := httpx.BearerToken(r)
	if err != nil {
		return err
	}
	want := s.d.BastionKey
	if want == "" || subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		return api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "invalid bastion key").
			WithHint("start boxkite-server and boxkite-bastion with the same BOXKITE_BASTION_KEY")
	}
	return nil
}

// errNoSSHAccess is the bastion's answer for an unknown key and for a
// sandbox the key's account does not have: the bastion turns both into a
// plain authentication failure.
var errNoSSHAccess = api.Errorf(http.StatusNotFound, api.CodeNotFound, "no sandbox by that id for this ssh key").
	WithHint("register the key with `boxkite ssh-keys add`")

// bastionTakeoverToken serves POST /v1/bastion/takeover-token: the
// bastion, holding the server's bastion key, asks for a token on behalf of
// a person who proved (to the bastion) that they hold public_key's private
// half, which must be registered to the sandbox's account; or who typed a
// takeover token as their password, which is spent here and passed on as
// a fresh token with the same grant.
func (s *Service) bastionTakeoverToken(w http.ResponseWriter, r *http.Request) error {
	var req api.BastionTokenRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	ctx := r.Context()
	var (
		accountID string
		g         authz.Grant
	)
	switch {
	case req.Token != "" && req.PublicKey != "":
		return httpx.Invalid("token", "send a public_key or a token, not both", "")
	case req.Token != "":
		c, err := s.parseTakeoverToken(ctx, req.Token, req.SandboxID)
		if err != nil {
			return err
		}
		accountID = c.Sub
		g = c.grant()
	default:
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(req.PublicKey)))
		if err != nil {
			return httpx.Invalid("public_key", "public_key is not an OpenSSH public key in authorized_keys format", "")
		}
		k, err := s.d.Store.SSHKeyByFingerprint(ctx, ssh.FingerprintSHA256(pub))
		if errors.Is(err, model.ErrNotFound) {
			return errNoSSHAccess
		}
		if err != nil {
			return fmt.Errorf("look up ssh key: %w", err)
		}
		accountID = k.AccountID
		g = authz.Grant{KeyID: k.ID, KeyName: k.Name, Via: authz.ViaSSHKey}
	}
	sb, err := s.d.Store.Sandbox(ctx, accountID, req.SandboxID)
	if errors.Is(err, model.ErrNotFound) || (err == nil && sb.Status == model.StatusCreating) {
		return errNoSSHAccess
	}
	if err != nil {
		return fmt.Errorf("load sandbox: %w", err)
	}
	if !sb.Active() {
		return s.d.NotActive(sb)
	}
	tok, err := s.mintTakeoverToken(ctx, accountID, sb.ID, g)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, tok)
	return nil
}
