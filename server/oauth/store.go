package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/model"
)

// Client is a registered public client.
type Client struct {
	ID           string // ClientIDPrefix + random
	Name         string
	RedirectURIs []string
	// RegistrationHash is the SHA-256 (hex) of the registration access
	// token that deletes the client (RFC 7592).
	RegistrationHash string
	CreatedAt        time.Time
}

// Code is an authorization code, kept by the SHA-256 (hex) of its value
// until a while after it expires. Its first exchange spends it (GrantID);
// a second one revokes the grant the first issued.
type Code struct {
	Hash        string
	ClientID    string
	AccountID   string
	RedirectURI string
	Challenge   string // the PKCE S256 code_challenge
	Resource    string // the protected resource the token is for
	CreatedAt   time.Time
	ExpiresAt   time.Time
	GrantID     string // the grant its first exchange issued; "": not yet exchanged
}

// Grant is what a user approved for one client: the family of every
// access and refresh token issued from one authorization code. Revoking
// it ends them all.
type Grant struct {
	ID        string
	ClientID  string
	AccountID string
	Resource  string
	CreatedAt time.Time
	RevokedAt time.Time // zero: in force
}

// RefreshToken is one refresh token of a grant, kept by the SHA-256 (hex)
// of its value. It is spent by its first use (UsedAt); a second use is
// reuse, and revokes the grant.
type RefreshToken struct {
	Hash      string
	GrantID   string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero: not yet used
}

// Store keeps the authorization server's records. Lookups of what does
// not exist return model.ErrNotFound.
type Store interface {
	CreateOAuthClient(ctx context.Context, c *Client) error
	OAuthClient(ctx context.Context, id string) (*Client, error)
	// DeleteOAuthClient deletes a client with its codes, grants and
	// refresh tokens.
	DeleteOAuthClient(ctx context.Context, id string) error
	CreateOAuthCode(ctx context.Context, c *Code) error
	// OAuthCode returns the code stored under hash.
	OAuthCode(ctx context.Context, hash string) (*Code, error)
	// SpendOAuthCode, in one transaction, returns the code stored under
	// hash as it was and, if it was not spent yet, marks it spent by g
	// and stores g with its first refresh token. A code it returns with
	// a GrantID was exchanged before (by that grant), and nothing
	// changed; on an error nothing changed either: the code is never
	// spent without its grant, nor one grant issued twice.
	SpendOAuthCode(ctx context.Context, hash string, g *Grant, first *RefreshToken) (*Code, error)
	OAuthGrant(ctx context.Context, id string) (*Grant, error)
	// RevokeOAuthGrant marks a grant revoked at now (a no-op if it was).
	RevokeOAuthGrant(ctx context.Context, id string, now time.Time) error
	OAuthRefreshToken(ctx context.Context, hash string) (*RefreshToken, error)
	// RotateOAuthRefreshToken spends the refresh token stored under hash
	// at now and stores next, in one transaction; spent is false (and
	// nothing is stored) when it was spent already.
	RotateOAuthRefreshToken(ctx context.Context, hash string, now time.Time, next *RefreshToken) (spent bool, err error)
}

// errSystemOnly refuses a caller the store: every OAuth record is read
// and written by the authorization server's own endpoints, before any
// caller is authenticated.
var errSystemOnly = errors.New("oauth: only the server itself may do this")

// authorized is the Store a Service keeps (New wraps its store in it),
// as server/internal/authz's Store is for model.Store. Every method is
// "system": the endpoints that use them (register, authorize, token,
// revoke, and checking an access token) run before a caller exists, so a
// request acting for an account — a tool call of /mcp/ — can never read
// or mint another account's grants through it. TestStoreAuthorized
// checks each method.
type authorized struct{ inner Store }

var _ Store = authorized{}

func system(ctx context.Context) error {
	if !authz.IsSystem(ctx) {
		return errSystemOnly
	}
	return nil
}

func (s authorized) CreateOAuthClient(ctx context.Context, c *Client) error {
	if err := system(ctx); err != nil {
		return err
	}
	return s.inner.CreateOAuthClient(ctx, c)
}

func (s authorized) OAuthClient(ctx context.Context, id string) (*Client, error) {
	if err := system(ctx); err != nil {
		return nil, err
	}
	return s.inner.OAuthClient(ctx, id)
}

func (s authorized) DeleteOAuthClient(ctx context.Context, id string) error {
	if err := system(ctx); err != nil {
		return err
	}
	return s.inner.DeleteOAuthClient(ctx, id)
}

func (s authorized) CreateOAuthCode(ctx context.Context, c *Code) error {
	if err := system(ctx); err != nil {
		return err
	}
	return s.inner.CreateOAuthCode(ctx, c)
}

func (s authorized) OAuthCode(ctx context.Context, hash string) (*Code, error) {
	if err := system(ctx); err != nil {
		return nil, err
	}
	return s.inner.OAuthCode(ctx, hash)
}

func (s authorized) SpendOAuthCode(ctx context.Context, hash string, g *Grant, first *RefreshToken) (*Code, error) {
	if err := system(ctx); err != nil {
		return nil, err
	}
	return s.inner.SpendOAuthCode(ctx, hash, g, first)
}

func (s authorized) OAuthGrant(ctx context.Context, id string) (*Grant, error) {
	if err := system(ctx); err != nil {
		return nil, err
	}
	return s.inner.OAuthGrant(ctx, id)
}

func (s authorized) RevokeOAuthGrant(ctx context.Context, id string, now time.Time) error {
	if err := system(ctx); err != nil {
		return err
	}
	return s.inner.RevokeOAuthGrant(ctx, id, now)
}

func (s authorized) OAuthRefreshToken(ctx context.Context, hash string) (*RefreshToken, error) {
	if err := system(ctx); err != nil {
		return nil, err
	}
	return s.inner.OAuthRefreshToken(ctx, hash)
}

func (s authorized) RotateOAuthRefreshToken(ctx context.Context, hash string, now time.Time, next *RefreshToken) (bool, error) {
	if err := system(ctx); err != nil {
		return false, err
	}
	return s.inner.RotateOAuthRefreshToken(ctx, hash, now, next)
}

// notFound reports whether err is a lookup of nothing.
func notFound(err error) bool { return errors.Is(err, model.ErrNotFound) }
