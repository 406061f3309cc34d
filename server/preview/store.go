package preview

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Record is a stored preview. Its token exists only as TokenHash.
type Record struct {
	ID        string
	AccountID string
	SandboxID string
	Port      int
	TokenHash string // hex SHA-256 of the token
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt time.Time // zero while not revoked
}

// Live reports whether r admits requests at t.
func (r *Record) Live(t time.Time) bool { return r.RevokedAt.IsZero() && t.Before(r.ExpiresAt) }

// ToAPI converts the record to its wire form, without token or URLs.
func (r *Record) ToAPI() api.Preview {
	out := api.Preview{ID: r.ID, SandboxID: r.SandboxID, Port: r.Port, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
	if !r.RevokedAt.IsZero() {
		t := r.RevokedAt.UTC()
		out.RevokedAt = &t
	}
	return out
}

// ErrNotFound is a Store's answer for no such record.
var ErrNotFound = errors.New("preview not found")

// Store keeps previews.
type Store interface {
	// CreatePreview inserts r.
	CreatePreview(ctx context.Context, r *Record) error
	// PreviewByTokenHash returns the preview with that token hash, or ErrNotFound.
	PreviewByTokenHash(ctx context.Context, hash string) (*Record, error)
	// Previews returns the account's previews of the sandbox, newest first.
	Previews(ctx context.Context, accountID, sandboxID string) ([]*Record, error)
	// RevokePreviews marks the account's live previews of the sandbox's
	// port revoked at t (port 0: every port) and returns them.
	RevokePreviews(ctx context.Context, accountID, sandboxID string, port int, t time.Time) ([]*Record, error)
}
