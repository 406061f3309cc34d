package server

import (
	"context"
	"time"
)

// Storage of the multi-tenant control plane (issue 5): passwords, key
// listings, SSH keys, settings, quota reservations and idempotency
// records. Each concern is its own interface; Store embeds them all.

// CredentialStore holds what signup, login and key management need beyond
// AccountStore.
type CredentialStore interface {
	// AccountByID returns the account, or ErrNotFound.
	AccountByID(ctx context.Context, id string) (*Account, error)
	// RevokedCredentials returns those of ids (API key or SSH key ids)
	// that are not valid credentials: revoked or unknown API keys, deleted
	// SSH keys.
	RevokedCredentials(ctx context.Context, ids []string) ([]string, error)
	// SetKeepOutputSecrets sets the account's Account.KeepOutputSecrets;
	// ErrNotFound if there is no such account.
	SetKeepOutputSecrets(ctx context.Context, accountID string, keep bool) error
	// CreateAccountWithPassword inserts a with its password hash (see
	// HashPassword); ErrConflict if the email is taken.
	CreateAccountWithPassword(ctx context.Context, a *Account, passwordHash string) error
	// PasswordHash returns the account with that email and its password
	// hash, "" when it has none (the local bootstrap account). ErrNotFound if none.
	PasswordHash(ctx context.Context, email string) (*Account, string, error)
	// ListAPIKeys returns the account's keys, revoked ones included, newest first.
	ListAPIKeys(ctx context.Context, accountID string) ([]*APIKey, error)
	// EnsureSetting stores value under name unless a value is there
	// already, and returns the stored value. Concurrent callers all get
	// the one value that won.
	EnsureSetting(ctx context.Context, name, value string) (string, error)
}

// SSHKey is a public key an account registered for the SSH bastion.
type SSHKey struct {
	ID          string
	AccountID   string
	Name        string
	PublicKey   string // "type base64", as ssh.MarshalAuthorizedKey without the newline
	Fingerprint string // SHA256:…, unique across all accounts
	CreatedAt   time.Time
}

// SSHKeyStore holds the accounts' SSH public keys.
type SSHKeyStore interface {
	// CreateSSHKey inserts k; ErrConflict if its fingerprint is registered
	// (by any account: the bastion maps a key to one account).
	CreateSSHKey(ctx context.Context, k *SSHKey) error
	// ListSSHKeys returns the account's keys, oldest first.
	ListSSHKeys(ctx context.Context, accountID string) ([]*SSHKey, error)
	// DeleteSSHKey removes the account's key; ErrNotFound if it is not the account's.
	DeleteSSHKey(ctx context.Context, accountID, id string) error
	// SSHKeyByFingerprint returns the key with that SHA256 fingerprint,
	// whichever account it belongs to, or ErrNotFound.
	SSHKeyByFingerprint(ctx context.Context, fingerprint string) (*SSHKey, error)
}

// Usage is what counts against fair-use limits at one moment.
type Usage struct {
	GlobalActive  int     // sandboxes being created or active, all accounts
	AccountActive int     // the account's sandboxes being created or active
	MonthlyHours  float64 // the account's sandbox-hours of sandboxes created since the month began
	// ActiveLabels are the labels of the account's sandboxes being created
	// or active (nil when none has one): a label names one sandbox.
	ActiveLabels map[string]bool
}

// QuotaStore checks limits and records new sandboxes atomically.
type QuotaStore interface {
	// ReserveSandboxes computes the account's Usage (monthly hours counted
	// from since up to now), calls check with it and, if check returns
	// nil, inserts sbs (status StatusCreating), all in one critical
	// section: no other ReserveSandboxes on the same database (from this
	// process or another) runs between the count and the insert. check's
	// error is returned as is.
	ReserveSandboxes(ctx context.Context, accountID string, since, now time.Time, check func(Usage) error, sbs []*Sandbox) error
	// Usage computes the account's Usage as ReserveSandboxes does, outside
	// any critical section.
	Usage(ctx context.Context, accountID string, since, now time.Time) (Usage, error)
}

// Idempotency record states.
const (
	IdempotencyInProgress = "in_progress"
	IdempotencyCompleted  = "completed"
)

// IdempotencyRecord is one Idempotency-Key of one credential on one route,
// and, once the request completed, the answer to replay.
type IdempotencyRecord struct {
	Credential  string // "key:<api key id>" or "account:<account id>" (access tokens)
	Method      string
	Path        string
	Key         string // the Idempotency-Key header
	RequestHash string // hex SHA-256 of the request body
	State       string // IdempotencyInProgress or IdempotencyCompleted
	Status      int    // the answer's HTTP status, once completed
	ContentType string
	Body        []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// IdempotencyStore keeps Idempotency-Key records across restarts.
type IdempotencyStore interface {
	// ClaimIdempotencyKey inserts rec (in progress) and returns nil, nil
	// if no live record has its credential, method, path and key;
	// otherwise it returns that record and inserts nothing. A record is
	// dead once expired (ExpiresAt at or before rec.CreatedAt) or, when in
	// progress, if it was created before staleBefore (its server died).
	ClaimIdempotencyKey(ctx context.Context, rec *IdempotencyRecord, staleBefore time.Time) (*IdempotencyRecord, error)
	// CompleteIdempotencyKey stores rec's answer and marks it completed.
	CompleteIdempotencyKey(ctx context.Context, rec *IdempotencyRecord) error
	// ReleaseIdempotencyKey deletes rec's in-progress record, so the key
	// may be used again (after a 5xx, or an answer too large to keep).
	ReleaseIdempotencyKey(ctx context.Context, rec *IdempotencyRecord) error
	// PurgeIdempotencyKeys deletes records that expired at or before t.
	PurgeIdempotencyKeys(ctx context.Context, t time.Time) error
}
