package oauth

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// The reference's lifetimes.
const (
	CodeTTL         = 60 * time.Second
	AccessTokenTTL  = 15 * time.Minute
	RefreshTokenTTL = 30 * 24 * time.Hour
	// sessionTTL is how long the consent page's sign-in cookie lasts.
	sessionTTL = 10 * time.Minute
)

// ClientIDPrefix starts every client id, as in the reference.
const ClientIDPrefix = "mcp_client_"

// ResourcePath is the protected resource: the hosted MCP endpoint.
const ResourcePath = "/mcp/"

// Deps is what the authorization server needs of the control plane.
type Deps struct {
	Store Store
	Log   *slog.Logger
	Now   func() time.Time
	// Issuer is the server's public base URL ("https://boxkite.example.com");
	// "" derives it from each request's Host (and TLS), which suits a
	// server reached directly, not one behind a proxy that rewrites Host.
	Issuer string
	// JWTKey is the server's token signing key; the authorization server
	// signs with a key derived from it (HKDF), so its tokens are never
	// confused with other token types.
	JWTKey func(ctx context.Context) ([]byte, error)
	// Login checks an account's email and password, as POST
	// /v1/auth/login does (its rate limit and error included).
	Login func(w http.ResponseWriter, r *http.Request, email, password string) (*model.Account, error)
	// Account loads an account by id.
	Account func(ctx context.Context, id string) (*model.Account, error)
	// Revoked ends at once what a credential holds (its requests in
	// flight), for a revoked grant.
	Revoked func(credentialID string)
}

// Service is the authorization server.
type Service struct{ d Deps }

// New returns the service; every field of d but Issuer is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Log == nil || d.Now == nil || d.JWTKey == nil || d.Login == nil || d.Account == nil || d.Revoked == nil {
		return nil, errors.New("oauth: a dependency is missing")
	}
	d.Issuer = strings.TrimSuffix(d.Issuer, "/")
	d.Store = authorized{inner: d.Store}
	return &Service{d: d}, nil
}

// issuer is the authorization server's identifier and base URL.
func (s *Service) issuer(r *http.Request) string {
	if s.d.Issuer != "" {
		return s.d.Issuer
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// resource is the protected resource's identifier: the /mcp/ URL.
func (s *Service) resource(r *http.Request) string { return s.issuer(r) + ResourcePath }

// key is the signing key of the authorization server's tokens.
func (s *Service) key(ctx context.Context) ([]byte, error) {
	k, err := s.d.JWTKey(ctx)
	if err != nil {
		return nil, err
	}
	return hkdf.Key(sha256.New, k, nil, "boxkite mcp oauth v1", 32)
}

// randomToken returns a fresh unguessable token (256 bits, base64url).
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails on Linux (Go 1.24+ crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashToken is how codes, refresh tokens and registration tokens are
// kept: their SHA-256, hex.
func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// grantCredential is the credential id of a grant, under which its
// requests are watched for revocation and audited.
func grantCredential(grantID string) string { return "oauth_grant:" + grantID }
