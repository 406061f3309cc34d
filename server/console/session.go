package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
)

// A console session is an API key minted for it (an admin key of the
// account, named SessionKeyName), kept in an HttpOnly, SameSite=Strict
// cookie scoped to /ui/ as "<key id>.<key>". Nothing of it is kept on the
// server, so sessions work on every server sharing the database, and
// sign-out is the key's revocation, which also ends what the session
// holds open (its terminals and watch streams) on every server. The CSRF
// token is a hash of the key: a page that cannot read the cookie cannot
// compute it, and it gives nothing of the key away.

// Names of the session's cookie and headers.
const (
	CookieName = "boxkite_console"
	CSRFHeader = "X-CSRF-Token"
)

// SessionKeyName is the name of the API keys the console mints for its
// sessions; keys of that name older than SessionTTL are revoked at the
// next sign-in.
const SessionKeyName = "console session"

// session is a signed-in browser's credential.
type session struct {
	keyID, key string
}

// parseSession reads a cookie value "<key id>.<key>". It checks the shape
// only; the API decides whether the key is valid.
func parseSession(v string) (session, bool) {
	id, key, ok := strings.Cut(v, ".")
	switch {
	case !ok || id == "" || len(id) > 64 || key == "" || len(key) > 128:
		return session{}, false
	case strings.ContainsFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}):
		return session{}, false
	case strings.Contains(key, "."):
		return session{}, false
	}
	return session{keyID: id, key: key}, true
}

func (s session) cookieValue() string { return s.keyID + "." + s.key }

// csrf is the session's CSRF token.
func (s session) csrf() string {
	sum := sha256.Sum256([]byte("boxkite console csrf\x00" + s.key))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (s session) auth() string { return "Bearer " + s.key }

var errSignedOut = api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "not signed in").
	WithHint("sign in at /ui/ (locally, `boxkite ui` opens a signed-in console)")

// sessionFrom returns r's session, if its cookie has one's shape.
func sessionFrom(r *http.Request) (session, bool) {
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return session{}, false
	}
	return parseSession(ck.Value)
}

// checkCSRF refuses a state-changing request that does not carry the
// session's CSRF token, or that comes from another origin.
func checkCSRF(r *http.Request, s session) error {
	if !sameOrigin(r, false) {
		return errCrossOrigin
	}
	got := r.Header.Get(CSRFHeader)
	if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf())) != 1 {
		return api.Errorf(http.StatusForbidden, api.CodeForbidden, "missing or wrong CSRF token").
			WithHint("reload the console; its requests carry the token of GET /ui/session")
	}
	return nil
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, s session) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: s.cookieValue(), Path: Prefix,
		MaxAge: int(c.cfg.SessionTTL / time.Second), HttpOnly: true, Secure: isTLS(r), SameSite: http.SameSiteStrictMode,
	})
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: isTLS(r), SameSite: http.SameSiteStrictMode,
	})
}

// SessionInfo is the answer of GET and POST /ui/session: who is signed
// in, and the CSRF token the page sends with every change.
type SessionInfo struct {
	AccountID string `json:"account_id"`
	Email     string `json:"email"`
	KeyID     string `json:"key_id"`
	CSRFToken string `json:"csrf_token"`
	// Organization is the organization the session acts for (one opened
	// with a link minted by a key of the organization), whose account's
	// Email is only "org:<id>"; absent for a person's own account.
	Organization *api.AccountOrganization `json:"organization,omitempty"`
}

// getSession serves GET /ui/session: the session's account, checked with
// the API (GET /v1/account), or 401 after clearing a dead cookie.
func (c *Console) getSession(w http.ResponseWriter, r *http.Request) error {
	s, ok := sessionFrom(r)
	if !ok {
		return errSignedOut
	}
	info, err := c.sessionInfo(r.Context(), r, s)
	if err != nil {
		if ae, ok := errors.AsType[*api.Error](err); ok && ae.Status == http.StatusUnauthorized {
			clearCookie(w, r)
			return errSignedOut
		}
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

func (c *Console) sessionInfo(ctx context.Context, r *http.Request, s session) (SessionInfo, error) {
	var acct api.Account
	if err := c.call(ctx, r, http.MethodGet, "/v1/account", s.auth(), nil, &acct); err != nil {
		return SessionInfo{}, err
	}
	return SessionInfo{AccountID: acct.ID, Email: acct.Email, KeyID: s.keyID, CSRFToken: s.csrf(), Organization: acct.Organization}, nil
}

// signIn serves POST /ui/session: email and password are checked by the
// API (POST /v1/auth/login), whose access token then mints the session's
// key (POST /v1/api-keys).
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) error {
	if !sameOrigin(r, false) {
		return errCrossOrigin
	}
	var creds api.Credentials
	if err := apihttp.DecodeJSON(w, r, &creds, 64<<10); err != nil {
		return err
	}
	ctx := r.Context()
	var tok api.TokenResponse
	if err := c.call(ctx, r, http.MethodPost, "/v1/auth/login", "", creds, &tok); err != nil {
		return err
	}
	s, err := c.mintSession(ctx, r, "Bearer "+tok.AccessToken)
	if err != nil {
		return err
	}
	c.replaceSession(w, r, s)
	writeJSON(w, http.StatusOK, SessionInfo{AccountID: tok.Account.ID, Email: tok.Account.Email, KeyID: s.keyID, CSRFToken: s.csrf()})
	return nil
}

// replaceSession sets s's cookie and revokes the key of the session the
// browser's cookie held until then, if any, as signing out would: a
// sign-in (or a link) over a session leaves no key behind that nothing
// holds any longer but a copy of the old cookie. The browser's other tabs
// go on with the new cookie; what the old one held open (a terminal, a
// watch) ends. A failure (the old key was revoked or expired already) is
// only logged.
func (c *Console) replaceSession(w http.ResponseWriter, r *http.Request, s session) {
	c.setCookie(w, r, s)
	if old, ok := sessionFrom(r); ok && old.keyID != s.keyID {
		c.revokeOwn(r, old)
	}
}

// mintSession creates a session's API key with auth (an access token or
// an admin key), then revokes the account's session keys that outlived
// SessionTTL.
func (c *Console) mintSession(ctx context.Context, r *http.Request, auth string) (session, error) {
	var created api.APIKeyCreated
	req := api.CreateAPIKeyRequest{Name: SessionKeyName, Role: "admin", ExpiresInSeconds: keyExpiry(c.cfg.SessionTTL)}
	if err := c.call(ctx, r, http.MethodPost, "/v1/api-keys", auth, req, &created); err != nil {
		return session{}, err
	}
	s := session{keyID: created.ID, key: created.Key}
	c.revokeStale(ctx, r, s)
	return s, nil
}

// keyExpiry is expires_in_seconds for a key that should last d: whole
// seconds, rounded up, within what the API allows. The console's keys
// expire with their cookie or link, on the server, so that a copied
// cookie or a link never opened stops working even if nobody signs in
// again to revoke it.
func keyExpiry(d time.Duration) *int64 {
	secs := int64((d + time.Second - 1) / time.Second)
	secs = min(max(secs, api.MinKeyExpiresInSeconds), api.MaxKeyExpiresInSeconds)
	return &secs
}

// revokeStale revokes the account's session keys older than SessionTTL,
// whose cookies have expired, and its link keys older than LinkTTL, whose
// links have; a failure is only logged.
func (c *Console) revokeStale(ctx context.Context, r *http.Request, s session) {
	var keys []api.APIKey
	if err := c.call(ctx, r, http.MethodGet, "/v1/api-keys", s.auth(), nil, &keys); err != nil {
		c.log.WarnContext(ctx, "console: list session keys", "err", err)
		return
	}
	now := c.cfg.Now()
	for _, k := range keys {
		var ttl time.Duration
		switch k.Name {
		case SessionKeyName:
			ttl = c.cfg.SessionTTL
		case LinkKeyName:
			ttl = c.cfg.LinkTTL
		default:
			continue
		}
		if k.RevokedAt != nil || !k.CreatedAt.Before(now.Add(-ttl)) {
			continue
		}
		if err := c.call(ctx, r, http.MethodDelete, "/v1/api-keys/"+k.ID, s.auth(), nil, nil); err != nil {
			c.log.WarnContext(ctx, "console: revoke stale key", "key", k.ID, "name", k.Name, "err", err)
		}
	}
}

// signOut serves DELETE /ui/session: the session's key is revoked
// (DELETE /v1/api-keys/{id}), which ends its terminals and streams, and
// the cookie is cleared.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) error {
	s, ok := sessionFrom(r)
	if !ok {
		clearCookie(w, r)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err := checkCSRF(r, s); err != nil {
		return err
	}
	err := c.call(r.Context(), r, http.MethodDelete, "/v1/api-keys/"+s.keyID, s.auth(), nil, nil)
	if ae, ok := errors.AsType[*api.Error](err); err != nil && (!ok || ae.Status != http.StatusUnauthorized) {
		// The key is still valid: the cookie stays, so that the page can
		// say so and sign out again, rather than forget a live key.
		return err
	}
	clearCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
