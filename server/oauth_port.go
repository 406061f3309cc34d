package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/hostedmcp"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/oauth"
)

// newOAuth builds the OAuth 2.1 authorization server of /mcp/
// (server/oauth) when Config.MCPOAuth asks for it; the store must keep
// its records (the SQL store does).
func (s *Server) newOAuth() error {
	if !s.cfg.MCPOAuth {
		return nil
	}
	st, ok := s.rawStore().(oauth.Store)
	if !ok {
		return errMCPOAuthStore
	}
	svc, err := oauth.New(oauth.Deps{
		Store: st, Log: s.log, Now: func() time.Time { return s.now() },
		Issuer: s.cfg.PublicURL, JWTKey: s.jwtKey, Login: s.accounts.CheckLogin,
		Account: s.store.AccountByID,
		Revoked: func(id string) { s.revocations.revoke(id, s.now()) },
	})
	if err != nil {
		return err
	}
	s.oauth = svc
	return nil
}

var errMCPOAuthStore = errors.New("--mcp-oauth needs a store that keeps OAuth clients (the SQL store)")

// oauthToken returns the bearer token of r when it is to be checked as an
// MCP OAuth access token: not an API key, on /mcp/ itself (CredMCP) or
// on a route taking an API key that a tool call of /mcp/ makes in-process
// (hostedmcp.InProcess). Nowhere else is such a token accepted: its
// audience is /mcp/.
func (s *Server) oauthToken(r *http.Request, cred httpx.Cred) (string, bool) {
	if s.oauth == nil {
		return "", false
	}
	switch cred {
	case httpx.CredMCP:
	case httpx.CredAPIKey, httpx.CredAPIKeyQuery, httpx.CredTakeover:
		if !hostedmcp.InProcess(r.Context()) {
			return "", false
		}
	default:
		return "", false
	}
	token, err := httpx.BearerToken(r)
	if err != nil || model.ValidAPIKey(token) {
		return "", false
	}
	return token, true
}

// authenticateOAuth records the account of an MCP OAuth access token as
// the caller, with the member-role credential standing for its grant.
func (s *Server) authenticateOAuth(r *http.Request, token string) error {
	acct, key, err := s.oauth.Authenticate(r, token, hostedmcp.InProcess(r.Context()))
	if err != nil {
		return err
	}
	ri := authz.From(r.Context())
	ri.Account, ri.Key = acct, key
	return nil
}
