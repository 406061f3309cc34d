package e2b

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/server/e2b/envd"
)

// ErrNotFound is what the control plane and the Store return for a
// sandbox or record that does not exist or is another account's.
var ErrNotFound = errors.New("not found")

// ErrAlreadyPaused is what ControlPlane.Pause returns for a sandbox that
// is paused already (E2B answers 409, which its SDK reads as false).
var ErrAlreadyPaused = errors.New("already paused")

// Caller is an authenticated client as the control plane knows it. The
// facade only reads its account; the control plane gets it back on every
// call to act for it.
type Caller interface {
	AccountID() string
	// KeyID is the API key's id: envd tokens are issued to it.
	KeyID() string
}

// Sandbox is what the facade needs of a boxkite sandbox.
type Sandbox struct {
	ID        string
	AccountID string
	Size      string // small, medium, large
	StorageGB float64
	CreatedAt time.Time
	ExpiresAt time.Time
	Paused    bool // paused: E2B's state "paused"
	AutoPause bool // paused, not destroyed, at ExpiresAt
	// RestoredFrom is the sandbox whose snapshot a create restored (its
	// template named the snapshot); "" for a new sandbox.
	RestoredFrom string
}

// CreateSpec is a sandbox to create.
type CreateSpec struct {
	ImageID   string        // "" means the default image; a snapshot's id, or name, restores it
	Lifetime  time.Duration // from now; whole seconds
	AutoPause bool          // pause it at the end of its lifetime instead of destroying it
}

// ControlPlane is the boxkite control plane as the facade consumes it: the
// sandbox lifecycle, authentication and the envd side's sessions, with
// tenancy, quotas, host capacity, rate limits and the audit log applied
// as on /v1 (server/e2bport implements it).
// Errors are *api.Error for what the client should see (quota, validation),
// ErrNotFound, or internal failures.
type ControlPlane interface {
	Auth
	Lifecycle
	Sessions
}

// Auth is the facade's authentication.
type Auth interface {
	// Authenticate resolves an API key.
	Authenticate(ctx context.Context, apiKey string) (Caller, error)
	// TokenKey is the secret envd tokens are derived from: the same on
	// every server sharing the store.
	TokenKey(ctx context.Context) ([]byte, error)
}

// Lifecycle is the caller's sandboxes and snapshots.
type Lifecycle interface {
	// Create creates a sandbox for the caller; a Lifetime past the
	// server's maximum is cut to it.
	Create(ctx context.Context, c Caller, spec CreateSpec) (Sandbox, error)
	// Sandbox returns the caller's running or paused sandbox.
	Sandbox(ctx context.Context, c Caller, id string) (Sandbox, error)
	// Sandboxes returns the caller's running and paused sandboxes.
	Sandboxes(ctx context.Context, c Caller) ([]Sandbox, error)
	// Destroy ends the caller's running or paused sandbox.
	Destroy(ctx context.Context, c Caller, id string) error
	// Pause pauses the caller's running sandbox, keeping its memory
	// (boxkite's freeze) or only its files (filesystem): ErrAlreadyPaused
	// when it is paused.
	Pause(ctx context.Context, c Caller, id string, keepMemory bool) error
	// Resume runs the caller's paused sandbox again, with the same id and
	// tokens; resumed is false when it was running.
	Resume(ctx context.Context, c Caller, id string) (sb Sandbox, resumed bool, err error)
	// Snapshot copies the caller's sandbox's filesystem into a snapshot,
	// which Create restores when a CreateSpec's ImageID names it.
	Snapshot(ctx context.Context, c Caller, id, name string) (SnapshotInfo, error)
	// Snapshots lists the caller's snapshots, newest first; of one
	// sandbox when sandboxID is set.
	Snapshots(ctx context.Context, c Caller, sandboxID string) ([]SnapshotInfo, error)
	// DeleteSnapshot deletes the caller's snapshot: ErrNotFound when it
	// has none of that id.
	DeleteSnapshot(ctx context.Context, c Caller, id string) error
	// Fork starts count children of the caller's sandbox, each with its
	// files as they are now, ending lifetime from now.
	Fork(ctx context.Context, c Caller, id string, count int, lifetime time.Duration) ([]Sandbox, error)
	// SetExpiry moves the sandbox's end to at, cut to the server's
	// maximum lifetime from now (which /v1's extend refuses to pass).
	SetExpiry(ctx context.Context, c Caller, id string, at time.Time) (Sandbox, error)
	// Usage reports the sandbox's memory and disk use now, a frozen
	// one's too (its CPU time 0: it uses none); ok is false when the
	// driver does not account for it, or the sandbox holds nothing.
	Usage(ctx context.Context, c Caller, id string) (u Usage, ok bool, err error)
	// KeepsImages reports whether the server builds and imports boxkite
	// images (POST /v1/images); the kube driver's keeps none.
	KeepsImages() bool
}

// Sessions is the envd side's view of running sandboxes.
type Sessions interface {
	// Session opens the account's running sandbox for envd calls made
	// with a token issued to the API key keyID, its commands starting
	// with env: envd.ErrGone when it is not running, envd.ErrRevoked when
	// the key is not the account's or no longer valid.
	Session(ctx context.Context, accountID, sandboxID, keyID string, env map[string]string) (envd.Session, error)
	// Running lists every account's running sandboxes with the account's
	// valid keys, or only sandboxID (if it runs) when it is not "".
	Running(ctx context.Context, sandboxID string) ([]envd.Running, error)
}

// SnapshotInfo is a snapshot as the facade shows it.
type SnapshotInfo struct {
	ID        string
	SandboxID string // the sandbox it was taken of
	Name      string // "" when it has none
}

// Usage is a sandbox's resource use.
type Usage struct {
	MemoryBytes int64
	// CPUMicros is the CPU time its processes used so far, in µs; 0 when
	// the driver does not account for it.
	CPUMicros int64
	// DiskUsedBytes and DiskTotalBytes are its own disk's use and size, 0
	// when it has none of its own (the kube driver's).
	DiskUsedBytes, DiskTotalBytes int64
}

// Record is what the facade keeps about a sandbox created through it,
// beyond what boxkite keeps: E2B's template, metadata and environment.
type Record struct {
	SandboxID  string
	AccountID  string
	TemplateID string
	Metadata   map[string]string
	EnvVars    map[string]string
	CreatedAt  time.Time
}

// Store keeps Records (server/sqlstore implements it).
type Store interface {
	// PutE2BSandbox stores rec.
	PutE2BSandbox(ctx context.Context, rec Record) error
	// E2BSandbox returns the record of a sandbox, or ErrNotFound.
	E2BSandbox(ctx context.Context, sandboxID string) (Record, error)
	// E2BSandboxes returns the account's records.
	E2BSandboxes(ctx context.Context, accountID string) ([]Record, error)
}
