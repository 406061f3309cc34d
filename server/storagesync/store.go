package storagesync

import (
	"context"
	"errors"
	"time"
)

// ErrNoSync is returned by Store.SyncState for a sandbox that was never
// synced.
var ErrNoSync = errors.New("sandbox is not synced")

// States of a sandbox's sync.
const (
	StateSyncing = "syncing" // the sandbox runs; its workspace is synced
	StateFinal   = "final"   // destroyed; its last flush is done
	StateDeleted = "deleted" // its stored files were deleted
)

// State is one sandbox's sync, as the store keeps it.
type State struct {
	SandboxID     string
	AccountID     string
	State         string
	LastFlushAt   time.Time // zero: never
	LastError     string    // "" after a flush that succeeded
	LastErrorAt   time.Time
	Attempts      int       // failed flushes in a row
	NextAttemptAt time.Time // no flush before then (backoff)
	RetainUntil   time.Time // zero: kept until deleted
	CreatedAt     time.Time
	FinalDone     bool // the final flush stored everything
	Pending       int  // queued writes not yet flushed (read only)
}

// Synced is one file as stored: its path under the workspace, and the size
// and modification time of the version stored.
type Synced struct {
	Path     string
	Size     int64
	MtimeNS  int64
	SyncedAt time.Time
}

// Store keeps the sync's state durably (server/sqlstore implements it): a
// row per synced sandbox, the index of stored files, and the queue of
// writes the API acknowledged, which survives a crash of the server.
type Store interface {
	// StartSync records a sandbox as synced; a second call changes nothing.
	StartSync(ctx context.Context, st *State) error
	// SyncState returns one sandbox's sync (ErrNoSync when there is none).
	SyncState(ctx context.Context, sandboxID string) (*State, error)
	// SyncStates returns the syncs in state, Pending filled in.
	SyncStates(ctx context.Context, state string) ([]*State, error)
	// UpdateSyncState writes st's fields back (not Pending).
	UpdateSyncState(ctx context.Context, st *State) error
	// EnqueueSync records an acknowledged write to path (relative to the
	// workspace) of a sandbox; a path queued again keeps one row.
	EnqueueSync(ctx context.Context, sandboxID, path string, at time.Time) error
	// QueuedSync returns the sandbox's queued paths (relative to the
	// workspace).
	QueuedSync(ctx context.Context, sandboxID string) ([]string, error)
	// DequeueSync removes the sandbox's writes queued at or before upTo.
	DequeueSync(ctx context.Context, sandboxID string, upTo time.Time) error
	// SyncedFiles returns the sandbox's index of stored files by path.
	SyncedFiles(ctx context.Context, sandboxID string) (map[string]Synced, error)
	// PutSynced records stored files, in one transaction; DeleteSynced
	// forgets the files at paths, in one transaction.
	PutSynced(ctx context.Context, sandboxID string, files []Synced) error
	DeleteSynced(ctx context.Context, sandboxID string, paths ...string) error
	// ClearSynced forgets the sandbox's index and queue.
	ClearSynced(ctx context.Context, sandboxID string) error
}
