package secrets

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Record is a stored secret. Its value exists only as Ciphertext, under a
// data key that exists only as WrappedKey (wrapped by the keyring's key
// KeyID).
type Record struct {
	ID           string
	AccountID    string
	Name         string
	AllowedHosts []string
	TrustTier    string // "" or api.TrustTierTestnet
	KeyID        string
	WrappedKey   []byte
	Ciphertext   []byte
	CreatedAt    time.Time
	UpdatedAt    time.Time
	LastUsedAt   time.Time // zero: never used
}

// ToAPI converts the record to its wire form, which has no value.
func (r *Record) ToAPI() api.Secret {
	out := api.Secret{
		ID: r.ID, Name: r.Name, AllowedHosts: append([]string{}, r.AllowedHosts...),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.TrustTier != "" {
		t := r.TrustTier
		out.TrustTier = &t
	}
	if !r.LastUsedAt.IsZero() {
		t := r.LastUsedAt.UTC()
		out.LastUsedAt = &t
	}
	return out
}

// Errors a Store returns.
var (
	// ErrNotFound: no such secret, or another account's.
	ErrNotFound = errors.New("secret not found")
	// ErrNameTaken: the account has a secret of that name.
	ErrNameTaken = errors.New("secret name taken")
	// ErrLimit: the account holds as many secrets as it may.
	ErrLimit = errors.New("secret limit reached")
	// ErrChanged: a rewrap found the record wrapped differently than read.
	ErrChanged = errors.New("secret changed meanwhile")
)

// Store keeps secrets and which sandboxes were granted which. Every
// lookup by account is scoped to it: another account's secret is
// ErrNotFound.
type Store interface {
	// CreateSecret inserts r unless the account holds limit secrets
	// already (ErrLimit) or one named r.Name (ErrNameTaken), atomically.
	CreateSecret(ctx context.Context, r *Record, limit int) error
	// Secrets returns the account's secrets, by name.
	Secrets(ctx context.Context, accountID string) ([]*Record, error)
	// UpdateSecret writes r's allowed hosts, key id, wrapped key,
	// ciphertext and update time over the account's secret r.ID;
	// ErrNotFound if there is none.
	UpdateSecret(ctx context.Context, r *Record) error
	// DeleteSecret removes the account's secret; ErrNotFound if none.
	DeleteSecret(ctx context.Context, accountID, id string) error
	// AllSecrets returns every account's secrets (for Rotate).
	AllSecrets(ctx context.Context) ([]*Record, error)
	// RewrapSecret replaces the secret's key id and wrapped key if its key
	// id is still oldKeyID; ErrChanged otherwise.
	RewrapSecret(ctx context.Context, id, oldKeyID, keyID string, wrapped []byte) error
	// TouchSecrets records a use at t of the account's secrets named.
	TouchSecrets(ctx context.Context, accountID string, names []string, t time.Time) error
	// GrantSecrets records that the sandbox may use the secrets its
	// account holds under the names given, as they are now: a secret
	// deleted and created again under its name is not granted by it.
	GrantSecrets(ctx context.Context, sandboxID string, names []string) error
	// SandboxSecretNames returns the names of the secrets granted to the
	// sandbox that still exist.
	SandboxSecretNames(ctx context.Context, sandboxID string) ([]string, error)
	// SandboxSecretGrants returns the sandbox's grants whose secrets
	// still exist, by name, each with its secret's id.
	SandboxSecretGrants(ctx context.Context, sandboxID string) ([]model.SecretGrant, error)
	// InheritSecrets grants the sandbox the secrets of grants (by id, as
	// another sandbox of its account was granted them): a grant whose
	// secret is gone, or is not of the sandbox's account, is not made.
	InheritSecrets(ctx context.Context, sandboxID string, grants []model.SecretGrant) error
}
