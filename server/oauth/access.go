package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// ErrInvalidAccessToken is the one answer for every refused access token
// (forged, expired, for another resource, of a revoked grant).
var ErrInvalidAccessToken = &api.Error{
	Status: http.StatusUnauthorized, Code: api.CodeInvalidToken,
	Message: "invalid, expired or revoked OAuth access token",
	Hint:    "refresh it at /oauth/token, or authorize again; access tokens last 15 minutes",
}

// Authenticate checks an access token presented to r: signed by this
// server, of type mcp_access, unexpired, for this server's /mcp/
// resource, of a grant still in force. It returns the account and the
// credential the request acts with: a member-role key standing for the
// grant (its id is grantCredential's, its name the client's), so the
// guard's role checks, audit and revocation treat it as a key that cannot
// manage keys.
//
// inProcess is set for a tool call's in-process request (hostedmcp):
// it carries the Authorization header of the /mcp/ request whose
// audience check it passed, but not that request's host, so its
// audience is only required to be a /mcp/ resource.
func (s *Service) Authenticate(r *http.Request, token string, inProcess bool) (*model.Account, *model.APIKey, error) {
	ctx := r.Context()
	key, err := s.key(ctx)
	if err != nil {
		return nil, nil, err
	}
	audience := s.resource(r)
	if inProcess {
		audience = ""
	}
	c, err := s.parseAccess(key, token, audience, s.d.Now())
	if err == nil && inProcess && (len(c.Audience) != 1 || !strings.HasSuffix(c.Audience[0], ResourcePath)) {
		err = errors.New("not a token for /mcp/")
	}
	if err != nil {
		return nil, nil, ErrInvalidAccessToken
	}
	g, err := s.d.Store.OAuthGrant(ctx, c.GrantID)
	if notFound(err) {
		return nil, nil, ErrInvalidAccessToken
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up grant: %w", err)
	}
	if !g.RevokedAt.IsZero() || g.AccountID != c.Subject {
		return nil, nil, ErrInvalidAccessToken
	}
	acct, err := s.d.Account(ctx, g.AccountID)
	if errors.Is(err, model.ErrNotFound) {
		return nil, nil, ErrInvalidAccessToken
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up account: %w", err)
	}
	name := "oauth client " + g.ClientID
	if cl, err := s.d.Store.OAuthClient(ctx, g.ClientID); err == nil && cl.Name != "" {
		name = "oauth: " + cl.Name
	}
	k := &model.APIKey{ID: grantCredential(g.ID), AccountID: acct.ID, Name: name, Role: model.RoleMember, CreatedAt: g.CreatedAt}
	return acct, k, nil
}

// equalHash compares two stored token hashes.
func equalHash(a, b string) bool { return a != "" && a == b }
