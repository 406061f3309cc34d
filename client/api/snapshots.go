package api

import "time"

// Snapshot statuses, in Snapshot.Status.
const (
	SnapshotPending   = "pending"   // being copied
	SnapshotCompleted = "completed" // stored; restorable
	SnapshotFailed    = "failed"    // the copy failed, or the server stopped during it
)

// DefaultSnapshotLimit is how many snapshots an account may keep, by
// default (the reference's).
const DefaultSnapshotLimit = 10

// CreateSnapshotRequest is the body of POST /v1/sandboxes/{id}/snapshots.
type CreateSnapshotRequest struct {
	Label string `json:"label,omitempty"`
}

// Snapshot is one snapshot of a sandbox's filesystem (the reference's
// shape, plus method).
type Snapshot struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"` // the sandbox it was taken of
	Label     string `json:"label"`
	Status    string `json:"status"`
	// StorageKeyPrefix is "snapshots/{account_id}/{snapshot_id}", as in
	// the reference; the data itself is in the server's content-addressed
	// store.
	StorageKeyPrefix string     `json:"storage_key_prefix"`
	SizeBytes        int64      `json:"size_bytes"`
	CreatedAt        time.Time  `json:"created_at"`
	DeletedAt        *time.Time `json:"deleted_at"`
	// Method is how the data was copied: "reflink" (copy-on-write),
	// "copy", "volume-snapshot" or "sidecar-copy".
	Method string `json:"method,omitempty"`
}

// RestoreSnapshotRequest is the body of POST /v1/snapshots/{id}/restore.
type RestoreSnapshotRequest struct {
	Label string `json:"label,omitempty"`
}

// ForkSandboxRequest is the body of POST /v1/sandboxes/{id}/fork.
type ForkSandboxRequest struct {
	Count int `json:"count,omitempty"` // 1 (default) .. the create count limit
}
