package oauth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"

	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// Token types (the "type" claim), so one kind is never taken for another.
const (
	typeSession = "oauth_session"
	typeAccess  = "mcp_access" // as in the reference
)

// sessionClaims are the consent page's sign-in cookie.
type sessionClaims struct {
	Type string `json:"type"`
	Sub  string `json:"sub"`
	authn.Times
}

func (s *Service) signSession(key []byte, acct *model.Account) (string, error) {
	now := s.d.Now()
	return authn.SignToken(key, sessionClaims{
		Type: typeSession, Sub: acct.ID, Times: authn.Times{Iat: now.Unix(), Exp: now.Add(sessionTTL).Unix()},
	})
}

func (s *Service) parseSession(key []byte, tok string) (string, error) {
	var c sessionClaims
	if err := authn.VerifyToken(key, tok, &c, s.d.Now()); err != nil {
		return "", err
	}
	if c.Type != typeSession || c.Sub == "" {
		return "", errors.New("not a session token")
	}
	return c.Sub, nil
}

// AccessClaims are an access token's claims: the account (sub), the
// resource it is for (aud), the client and the grant it came from.
type AccessClaims struct {
	Type     string `json:"type"`
	ClientID string `json:"client_id"`
	GrantID  string `json:"grant"`
	jwt.RegisteredClaims
}

// AccessTokenResponse is the token endpoint's answer (RFC 6749 §5.1).
type AccessTokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
}

// token serves POST /oauth/token: the authorization_code grant (PKCE
// S256) and the refresh_token grant (rotation, reuse detection).
func (s *Service) token(w http.ResponseWriter, r *http.Request) error {
	return answer(w, s.tokenOAuth(w, r))
}

// tokenOAuth is token's work.
func (s *Service) tokenOAuth(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, httpx.MaxSmallBody)
	if err := r.ParseForm(); err != nil {
		return errInvalidRequest("send the parameters form-encoded (application/x-www-form-urlencoded)")
	}
	if e := checkRequestText(r); e != nil {
		return e
	}
	f := r.PostForm
	c, err := s.d.Store.OAuthClient(r.Context(), f.Get("client_id"))
	if notFound(err) || f.Get("client_id") == "" {
		return errInvalidClient
	}
	if err != nil {
		return fmt.Errorf("look up oauth client: %w", err)
	}
	// The signing key first: once a code or refresh token is spent, only
	// the answer is left to fail.
	key, err := s.key(r.Context())
	if err != nil {
		return err
	}
	var g *Grant
	var refresh string // the new grant's first refresh token, or the rotated one
	switch f.Get("grant_type") {
	case grantAuthorizationCode:
		g, refresh, err = s.exchangeCode(r, c)
	case grantRefreshToken:
		g, refresh, err = s.refresh(r, c)
	default:
		return &Error{Status: http.StatusBadRequest, Code: "unsupported_grant_type", Description: "grant_type must be authorization_code or refresh_token"}
	}
	if err != nil {
		return err
	}
	return s.issue(w, r, key, g, refresh)
}

// exchangeCode checks an authorization code, then spends it and stores
// the grant it issues with the grant's first refresh token, in one
// transaction: a failure there leaves the code unspent, so the client's
// retry succeeds, and a code is never spent without its grant. A code
// exchanged before is a stolen one (or a replay): the grant its first
// exchange issued is revoked, with every access and refresh token of it
// (OAuth 2.1 §4.1.3). A code that fails a check is left unspent: the
// request did not prove it holds the code's verifier.
func (s *Service) exchangeCode(r *http.Request, c *Client) (*Grant, string, error) {
	f := r.PostForm
	ctx := r.Context()
	hash := hashToken(f.Get("code"))
	code, err := s.d.Store.OAuthCode(ctx, hash)
	if notFound(err) {
		return nil, "", errInvalidGrant("unknown, used or expired authorization code")
	}
	if err != nil {
		return nil, "", fmt.Errorf("look up authorization code: %w", err)
	}
	if code.GrantID != "" {
		return nil, "", s.codeReused(r, code)
	}
	now := s.d.Now()
	verifier := f.Get("code_verifier")
	switch {
	case expired(code.ExpiresAt, now):
		return nil, "", errInvalidGrant("unknown, used or expired authorization code")
	case code.ClientID != c.ID:
		return nil, "", errInvalidGrant("the code was issued to another client")
	case f.Get("redirect_uri") != code.RedirectURI:
		return nil, "", errInvalidGrant("redirect_uri differs from the authorization request's")
	case len(verifier) < 43 || len(verifier) > 128:
		return nil, "", errInvalidGrant("code_verifier must be 43 to 128 characters")
	case subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(verifier)), []byte(code.Challenge)) != 1:
		return nil, "", errInvalidGrant("code_verifier does not match the code_challenge")
	case f.Get("resource") != "" && f.Get("resource") != code.Resource:
		return nil, "", &Error{Status: http.StatusBadRequest, Code: "invalid_target", Description: "resource differs from the authorization request's"}
	}
	g := &Grant{ID: model.NewID(), ClientID: c.ID, AccountID: code.AccountID, Resource: code.Resource, CreatedAt: now}
	refresh := randomToken()
	first := &RefreshToken{Hash: hashToken(refresh), GrantID: g.ID, CreatedAt: now, ExpiresAt: now.Add(RefreshTokenTTL)}
	spent, err := s.d.Store.SpendOAuthCode(ctx, hash, g, first)
	if notFound(err) {
		return nil, "", errInvalidGrant("unknown, used or expired authorization code")
	}
	if err != nil {
		return nil, "", fmt.Errorf("spend authorization code: %w", err)
	}
	if spent.GrantID != "" {
		return nil, "", s.codeReused(r, spent) // a concurrent exchange spent it first
	}
	s.d.Log.InfoContext(ctx, "oauth grant issued", "grant", g.ID, "client", g.ClientID, "account", g.AccountID)
	return g, refresh, nil
}

// codeReused revokes the grant of code's first exchange after its second.
func (s *Service) codeReused(r *http.Request, code *Code) error {
	if err := s.revokeGrant(r, code.GrantID); err != nil {
		return err
	}
	s.d.Log.WarnContext(r.Context(), "oauth authorization code reused; grant revoked", "grant", code.GrantID, "client", code.ClientID, "account", code.AccountID)
	return errInvalidGrant("authorization code reused: the grant it issued and all its tokens are revoked; authorize again")
}

// refresh spends a refresh token. A token used twice is a stolen one (or
// a replay): the whole grant is revoked, its access tokens with it.
func (s *Service) refresh(r *http.Request, c *Client) (*Grant, string, error) {
	ctx := r.Context()
	hash := hashToken(r.PostForm.Get(grantRefreshToken))
	rt, err := s.d.Store.OAuthRefreshToken(ctx, hash)
	if notFound(err) {
		return nil, "", errInvalidGrant("unknown refresh token")
	}
	if err != nil {
		return nil, "", fmt.Errorf("look up refresh token: %w", err)
	}
	g, err := s.d.Store.OAuthGrant(ctx, rt.GrantID)
	if notFound(err) {
		return nil, "", errInvalidGrant("unknown refresh token")
	}
	if err != nil {
		return nil, "", fmt.Errorf("look up grant: %w", err)
	}
	now := s.d.Now()
	switch {
	case g.ClientID != c.ID:
		return nil, "", errInvalidGrant("the refresh token was issued to another client")
	case !g.RevokedAt.IsZero():
		return nil, "", errInvalidGrant("the grant was revoked; authorize again")
	case !rt.UsedAt.IsZero():
		return nil, "", s.reused(r, g)
	case expired(rt.ExpiresAt, now):
		return nil, "", errInvalidGrant("the refresh token expired; authorize again")
	}
	next := &RefreshToken{GrantID: g.ID, CreatedAt: now, ExpiresAt: now.Add(RefreshTokenTTL)}
	tok := randomToken()
	next.Hash = hashToken(tok)
	spent, err := s.d.Store.RotateOAuthRefreshToken(ctx, hash, now, next)
	if err != nil {
		return nil, "", fmt.Errorf("rotate refresh token: %w", err)
	}
	if !spent {
		return nil, "", s.reused(r, g) // another request spent it first
	}
	return g, tok, nil
}

// reused revokes g after a refresh token's reuse.
func (s *Service) reused(r *http.Request, g *Grant) error {
	if err := s.revokeGrant(r, g.ID); err != nil {
		return err
	}
	s.d.Log.WarnContext(r.Context(), "oauth refresh token reused; grant revoked", "grant", g.ID, "client", g.ClientID, "account", g.AccountID)
	return errInvalidGrant("refresh token reused: the grant and all its tokens are revoked; authorize again")
}

func (s *Service) revokeGrant(r *http.Request, id string) error {
	if err := s.d.Store.RevokeOAuthGrant(r.Context(), id, s.d.Now()); err != nil && !notFound(err) {
		return fmt.Errorf("revoke grant: %w", err)
	}
	s.d.Revoked(grantCredential(id))
	return nil
}

// issue answers a token request for g: an access token signed with key
// and the refresh token (the new grant's first, or the rotated one),
// stored already.
func (s *Service) issue(w http.ResponseWriter, r *http.Request, key []byte, g *Grant, refresh string) error {
	now := s.d.Now()
	access, err := authn.SignToken(key, AccessClaims{
		Type: typeAccess, ClientID: g.ClientID, GrantID: g.ID,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: s.issuer(r), Subject: g.AccountID, Audience: jwt.ClaimStrings{g.Resource},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(AccessTokenTTL)), ID: model.NewID(),
		},
	})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	httpx.WriteJSON(w, http.StatusOK, AccessTokenResponse{
		AccessToken: access, TokenType: "Bearer", ExpiresIn: int(AccessTokenTTL.Seconds()), RefreshToken: refresh,
	})
	return nil
}

// revoke serves POST /oauth/revoke (RFC 7009): a refresh or access token
// of the client revokes its whole grant. Unknown tokens are answered 200
// as well, as the RFC asks.
func (s *Service) revoke(w http.ResponseWriter, r *http.Request) error {
	return answer(w, s.revokeOAuth(w, r))
}

// revokeOAuth is revoke's work.
func (s *Service) revokeOAuth(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, httpx.MaxSmallBody)
	if err := r.ParseForm(); err != nil {
		return errInvalidRequest("send the parameters form-encoded (application/x-www-form-urlencoded)")
	}
	if e := checkRequestText(r); e != nil {
		return e
	}
	ctx := r.Context()
	tok, clientID := r.PostForm.Get("token"), r.PostForm.Get("client_id")
	if tok == "" {
		return errInvalidRequest("token is required")
	}
	var grantID string
	if rt, err := s.d.Store.OAuthRefreshToken(ctx, hashToken(tok)); err == nil {
		grantID = rt.GrantID
	} else if !notFound(err) {
		return fmt.Errorf("look up refresh token: %w", err)
	} else if key, err := s.key(ctx); err != nil {
		return err
	} else if c, err := s.parseAccess(key, tok, "", time.Time{}); err == nil {
		grantID = c.GrantID
	}
	if grantID != "" {
		g, err := s.d.Store.OAuthGrant(ctx, grantID)
		if err != nil && !notFound(err) {
			return fmt.Errorf("look up grant: %w", err)
		}
		if g != nil && (clientID == "" || g.ClientID == clientID) {
			if err := s.revokeGrant(r, g.ID); err != nil {
				return err
			}
			s.d.Log.InfoContext(ctx, "oauth grant revoked", "grant", g.ID, "client", g.ClientID)
		}
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// parseAccess verifies an access token: signature, type, expiry (by now;
// zero time: any) and audience (aud must contain audience; "": any).
func (s *Service) parseAccess(key []byte, tok, audience string, now time.Time) (*AccessClaims, error) {
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired()}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	if now.IsZero() {
		opts = append(opts, jwt.WithoutClaimsValidation())
	} else {
		opts = append(opts, jwt.WithTimeFunc(func() time.Time { return now }))
	}
	var c AccessClaims
	if _, err := jwt.NewParser(opts...).ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return key, nil }); err != nil {
		return nil, err
	}
	if c.Type != typeAccess || c.Subject == "" || c.GrantID == "" {
		return nil, errors.New("not an MCP access token")
	}
	return &c, nil
}
