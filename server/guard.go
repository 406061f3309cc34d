package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
)

// register adds an error-returning handler for pattern behind the
// credential check, the rate limit of its bucket (bucketOf) and, for
// POSTs, Idempotency-Key handling. Every route goes through here, so
// Routes lists them all.
func (s *Server) register(rt httpx.Route) {
	s.registered = append(s.registered, httpx.Route{RouteDoc: httpx.RouteDoc{Pattern: rt.Pattern}, Cred: rt.Cred, Handler: rt.Handler})
	pattern, cred, h := rt.Pattern, rt.Cred, rt.Handler
	bucket := bucketOf(pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		err := s.guard(w, r, pattern, cred, bucket, !rt.OwnText, h)
		var refused *authRefusal
		if errors.As(err, &refused) {
			err = refused.err
			if rt.Refused != nil {
				rt.Refused(r, err)
			}
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// authRefusal marks guard's error as the credential check's.
type authRefusal struct{ err error }

func (e *authRefusal) Error() string { return e.err.Error() }
func (e *authRefusal) Unwrap() error { return e.err }

func (s *Server) guard(w http.ResponseWriter, r *http.Request, pattern string, cred httpx.Cred, bucket string, checkText bool,
	h func(http.ResponseWriter, *http.Request) error,
) error {
	if bucket == bucketAuth {
		if err := s.limitRate(w, bucket, limits.ClientSource(r)); err != nil {
			return err
		}
	}
	if err := s.authenticateAs(r, cred); err != nil {
		if cred == httpx.CredMCP && s.oauth != nil {
			w.Header().Set("WWW-Authenticate", s.oauth.Challenge(r)) // oauth_port.go
		}
		return &authRefusal{err: err}
	}
	// From here the request ends when its credential is revoked (revoke.go).
	r, stop := s.withRevocation(r)
	defer stop()
	h = answerRevocation(h)
	if bucket != "" && bucket != bucketAuth {
		if err := s.limitRate(w, bucket, accountFrom(r.Context()).ID); err != nil {
			return err
		}
	}
	if err := apihttp.CheckPathValues(r); err != nil { // an {id} no id can be: not found, before any lookup
		return err
	}
	// A query parameter or header no text of the API can be: refused up
	// front, as a body's is, alike on every store (and before an
	// Idempotency-Key is stored).
	if checkText {
		if err := apihttp.CheckRequestText(r); err != nil {
			return err
		}
	}
	if cred != httpx.CredNone && cred != httpx.CredBastion && s.idempotencyApplies(pattern, r) {
		return s.idempotent(w, r, h)
	}
	return h(w, r)
}

// Routes returns every registered pattern ("METHOD /path", or "/" for the
// catch-all), in registration order.
func (s *Server) Routes() []string {
	out := make([]string, len(s.registered))
	for i, rt := range s.registered {
		out[i] = rt.Pattern
	}
	return out
}

func (s *Server) authenticateAs(r *http.Request, cred httpx.Cred) error {
	if token, ok := s.oauthToken(r, cred); ok { // oauth_port.go
		return s.authenticateOAuth(r, token)
	}
	switch cred {
	case httpx.CredNone:
		return nil
	case httpx.CredAPIKey, httpx.CredMCP:
		return s.authenticate(r)
	case httpx.CredAPIKeyQuery:
		return s.authenticateQuery(r)
	case httpx.CredTakeover:
		return s.takeover.AuthenticateTakeover(r)
	case httpx.CredBastion:
		return s.takeover.AuthenticateBastion(r)
	}
	token, err := httpx.BearerToken(r)
	if err != nil {
		return err
	}
	if cred == httpx.CredTokenOrAdmin && model.ValidAPIKey(token) {
		if err := s.authenticateKey(r, token); err != nil {
			return err
		}
		if k := authz.From(r.Context()).Key; k.Role != model.RoleAdmin && !revokesItself(r, k.ID) {
			return errMemberKeyManagement
		}
		return nil
	}
	return s.authenticateToken(r, token)
}

// revokesItself reports whether r revokes the very key it is sent with,
// which any key may do, a member key too: signing out (the console's
// sign-out, `boxkite logout`) must end a session whose key an
// organization's demotion made a member key (docs/accounts.md).
func revokesItself(r *http.Request, keyID string) bool {
	return r.Method == http.MethodDelete && r.Pattern == "DELETE /v1/api-keys/{key_id}" && r.PathValue("key_id") == keyID
}

var (
	errMemberKeyManagement = &api.Error{
		Status: http.StatusForbidden, Code: api.CodeForbidden,
		Message: "member keys cannot manage API keys",
		Hint:    "use an admin key, or log in (`boxkite login`) for an access token",
	}
	errKeyNotToken = &api.Error{
		Status: http.StatusUnauthorized, Code: api.CodeWrongCredentialType,
		Message: "this route takes an access token, not an API key",
		Hint:    "POST /v1/auth/login returns an access_token; send it as Authorization: Bearer <token>",
	}
	errTokenNotKey = &api.Error{
		Status: http.StatusUnauthorized, Code: api.CodeWrongCredentialType,
		Message: "this route takes an API key, not an access token",
		Hint:    "create a key with POST /v1/api-keys (`boxkite keys create`) and send it as Authorization: Bearer bxk_live_…",
	}
)

// authenticateToken verifies an access token and records its account as
// the caller. Tokens are not revocable; they expire after AccessTokenTTL.
func (s *Server) authenticateToken(r *http.Request, token string) error {
	if model.ValidAPIKey(token) {
		return errKeyNotToken
	}
	ctx := r.Context()
	key, err := s.jwtKey(ctx)
	if err != nil {
		return err
	}
	c, err := authn.ParseJWT(key, token, s.now())
	if err != nil {
		msg := "invalid access token"
		if errors.Is(err, authn.ErrTokenExpired) {
			msg = "the access token has expired"
		}
		return &api.Error{
			Status: http.StatusUnauthorized, Code: api.CodeInvalidToken, Message: msg,
			Hint: fmt.Sprintf("log in again (POST /v1/auth/login); access tokens last %v", s.cfg.AccessTokenTTL),
		}
	}
	acct, err := s.store.AccountByID(ctx, c.Sub)
	if errors.Is(err, model.ErrNotFound) {
		return &api.Error{Status: http.StatusUnauthorized, Code: api.CodeInvalidToken, Message: "invalid access token"}
	}
	if err != nil {
		return fmt.Errorf("look up account: %w", err)
	}
	authz.From(ctx).Account = acct
	return nil
}

// answerRevocation wraps h so that an error it returns because its
// request's credential was revoked, expired or demoted meanwhile (a read
// cut by the cancellation: "load sandbox: context canceled") is answered
// as that (authz.RequestEnded), not as a 500.
func answerRevocation(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		err := h(w, r)
		if ended := authz.RequestEnded(r.Context(), err); ended != nil {
			return errors.Join(ended, err)
		}
		return err
	}
}
