package accounts

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/model"
)

// Store is what accounts keeps in the store.
type Store interface {
	model.AccountStore
	model.CredentialStore
	model.SSHKeyStore
}

// Deps is what the accounts service needs of the control plane.
type Deps struct {
	Store  Store
	Log    *slog.Logger
	Now    func() time.Time
	Hasher *authn.Hasher
	// IssueAccessToken returns a fresh access token for acct and its
	// lifetime (the server keeps the signing key).
	IssueAccessToken func(ctx context.Context, acct *model.Account) (string, time.Duration, error)
	// LoginRate counts a login attempt for email against its rate limit,
	// and answers 429 (setting Retry-After on w) when it is spent.
	LoginRate func(w http.ResponseWriter, email string) error
	// Revoked ends at once what a credential (API key or SSH key) holds:
	// its streams, terminals and bastion sessions.
	Revoked func(credentialID string)
}

// Service serves the accounts routes.
type Service struct{ d Deps }

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Log == nil || d.Now == nil || d.Hasher == nil ||
		d.IssueAccessToken == nil || d.LoginRate == nil || d.Revoked == nil {
		return nil, errors.New("accounts: a dependency is missing")
	}
	return &Service{d: d}, nil
}
