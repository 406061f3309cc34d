package server

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by Store methods when the record does not exist
// or, for account-scoped lookups, belongs to another account.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a record with the same unique value exists.
var ErrConflict = errors.New("conflict")

// Errors a store wraps when it cannot commit a write because of the
// database itself, not the request: the server then fails closed on
// audited work (auditgate.go) and says which in /health/ready.
var (
	ErrStoreReadOnly = errors.New("the database is read-only")
	ErrStoreFull     = errors.New("the database's disk is full")
	ErrStoreIO       = errors.New("the database cannot write to its disk")
)

// A Store persists accounts, keys and sandbox records. server/sqlstore
// implements it for SQLite (and later Postgres). It is split by concern so
// that later issues (quotas, audit, secrets) add interfaces rather than grow
// one; a deployment may back each with a different implementation.
type Store interface {
	AccountStore
	SandboxStore
	AuditStore
	CredentialStore
	SSHKeyStore
	QuotaStore
	IdempotencyStore
	AllowlistStore
	VolumeStore
	MCPConnectionStore
	RecordingStore
	TokenStore
	EgressStore
	// Ping reports whether the store answers, for /health/ready.
	Ping(ctx context.Context) error
	// Close releases the store.
	Close() error
}

// AccountStore holds accounts and their API keys.
type AccountStore interface {
	// APIKeyByHash returns the key with the given hash and its account.
	// Revoked keys are returned too; the caller decides. ErrNotFound if none.
	APIKeyByHash(ctx context.Context, hash string) (*APIKey, *Account, error)
	// CreateAccount inserts a; ErrConflict if the email is taken.
	CreateAccount(ctx context.Context, a *Account) error
	// AccountByEmail returns the account with that email, or ErrNotFound.
	AccountByEmail(ctx context.Context, email string) (*Account, error)
	// CreateAPIKey inserts k; ErrConflict if the hash exists.
	CreateAPIKey(ctx context.Context, k *APIKey) error
	// EnsureAccountKey makes sure an account with a.Email exists (inserting
	// a if not) and that k is registered for it, in one transaction. It is
	// idempotent. It returns the stored account and key, which may be older
	// records than a and k. A key hash registered to another account is ErrConflict.
	EnsureAccountKey(ctx context.Context, a *Account, k *APIKey) (*Account, *APIKey, error)
	// RevokeAPIKey marks the key revoked at t; ErrNotFound if it is not the account's.
	RevokeAPIKey(ctx context.Context, accountID, keyID string, t time.Time) error
	// TouchAPIKey records a use of the key at t.
	TouchAPIKey(ctx context.Context, keyID string, t time.Time) error
}

// SandboxStore holds sandbox records.
type SandboxStore interface {
	// CreateSandbox inserts sb; ErrConflict if the id exists.
	CreateSandbox(ctx context.Context, sb *Sandbox) error
	// Sandbox returns the account's sandbox, or ErrNotFound (also for another account's).
	Sandbox(ctx context.Context, accountID, id string) (*Sandbox, error)
	// SandboxByID returns any account's sandbox, or ErrNotFound: for what
	// the server records about a sandbox on its own (lost, frozen).
	SandboxByID(ctx context.Context, id string) (*Sandbox, error)
	// ListSandboxes returns the account's sandboxes newest first, all or
	// only the active ones. Rows still being created are left out.
	ListSandboxes(ctx context.Context, accountID string, activeOnly bool) ([]*Sandbox, error)
	// SandboxesWithStatus returns every account's sandboxes in one status,
	// for reconciliation at start-up.
	SandboxesWithStatus(ctx context.Context, status string) ([]*Sandbox, error)
	// ExpiredSandboxes returns active sandboxes whose expires_at is at or before t.
	ExpiredSandboxes(ctx context.Context, t time.Time) ([]*Sandbox, error)
	// UpdateSandbox loads the sandbox, calls fn on it and writes the result,
	// all in one transaction; fn's error aborts the update and is returned.
	UpdateSandbox(ctx context.Context, id string, fn func(*Sandbox) error) (*Sandbox, error)
	// DeleteSandbox removes the row, for a create that failed; ErrNotFound if none.
	DeleteSandbox(ctx context.Context, id string) error
	// CountActiveSandboxes counts the account's active sandboxes; "" counts all accounts.
	CountActiveSandboxes(ctx context.Context, accountID string) (int, error)
}

// AuditStore holds the audit log: per sandbox, a hash chain of
// ExecLogEntry. Entries are only ever appended.
type AuditStore interface {
	// AppendExecLog gives e the next Seq of its sandbox, seals it after the
	// sandbox's last entry (ExecLogEntry.Seal) and inserts it, in one
	// transaction; appends to one sandbox are serialised, so the chain
	// never forks.
	AppendExecLog(ctx context.Context, e *ExecLogEntry) error
	// ExecLog returns at most limit of the sandbox's entries in Seq order,
	// skipping the first offset, and how many it has in all.
	ExecLog(ctx context.Context, sandboxID string, limit, offset int) ([]*ExecLogEntry, int, error)
	// ExecLogHead returns where the sandbox's chain ended at its last
	// append, as recorded with it: Seq 0 and api.GenesisHash before any.
	ExecLogHead(ctx context.Context, sandboxID string) (ExecLogHead, error)
	// ExecLogAfter returns at most limit of the sandbox's entries whose Seq
	// is greater than afterSeq, in Seq order (live watchers catching up).
	ExecLogAfter(ctx context.Context, sandboxID string, afterSeq int64, limit int) ([]*ExecLogEntry, error)
	// ExecLogSeq returns the Seq of the sandbox's entry entryID, or
	// ErrNotFound (watchers resuming from Last-Event-ID).
	ExecLogSeq(ctx context.Context, sandboxID, entryID string) (int64, error)
}
