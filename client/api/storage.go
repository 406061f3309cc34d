package api

import (
	"strings"
	"time"
)

// Workspace sync to object storage (docs/storage.md).

const (
	// CodeStorageUnavailable (503): the server has no object storage
	// configured.
	CodeStorageUnavailable = "storage_unavailable"
	// CodeStorageFailed (502): the object storage refused or could not be
	// reached; the sync retries by itself.
	CodeStorageFailed = "storage_failed"
)

// TreeEntry is one entry of a sidecar's GET /files/tree: a regular file
// (Kind "file") or a symbolic link, reported and never followed (Kind
// "symlink"). Path is relative to the tree's root.
type TreeEntry struct {
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	Size       int64  `json:"size"`
	ModifiedNS int64  `json:"modified_ns"`
}

// TreeResult answers GET /files/tree; Truncated says the walk stopped at
// its entry cap.
//
// With ?since= on the workspace, the sidecar's change journal answers
// (docs/storage.md): Token is its position when the walk began, to pass
// as since next time ("" when it does not watch). Partial says Entries
// cover only the paths in Changed, each with its whole subtree, and the
// rest of the tree is as it was at since: Partial with no Changed means
// nothing changed. Otherwise Entries are the whole tree. Journal is
// "watching", or why the sidecar does not: "over_budget", "unavailable"
// (no inotify instance or watch to be had), "unsupported".
type TreeResult struct {
	Entries     []TreeEntry `json:"entries"`
	Truncated   bool        `json:"truncated,omitempty"`
	Token       string      `json:"token,omitempty"`
	Partial     bool        `json:"partial,omitempty"`
	Changed     []string    `json:"changed,omitempty"`
	Journal     string      `json:"journal,omitempty"`
	WatchedDirs int         `json:"watched_dirs,omitempty"`
}

// MaxJournalDirs is the most directories a sidecar's change journal
// watches: a host asking for a larger budget (?max_dirs=) gets
// this many. The storage sync's configuration refuses more.
const MaxJournalDirs = 65536

// InScope reports whether the slash-separated path p is scope or lies
// below it: what a path of TreeResult.Changed covers. The sidecar's
// journal and the storage sync both decide scopes with it, so they agree.
func InScope(p, scope string) bool {
	return strings.HasPrefix(p, scope) && (len(p) == len(scope) || p[len(scope)] == '/')
}

// BundleRequest is the body of a sidecar's POST /files/bundle: regular
// files under Root, named relative to it, answered as a tar of those that
// are still regular files reached without a link.
type BundleRequest struct {
	Root  string   `json:"root"`
	Paths []string `json:"paths"`
}

// SyncStatus answers GET /v1/sandboxes/{id}/sync.
type SyncStatus struct {
	SessionID string `json:"session_id"`
	// Backend is the kind of object storage ("s3", "azure", "gcs").
	Backend string `json:"backend"`
	// State is "syncing" (the sandbox runs), "final" (destroyed, its last
	// flush done) or "deleted" (its stored files were deleted).
	State          string     `json:"state"`
	Pending        int        `json:"pending"`
	SyncedFiles    int        `json:"synced_files"`
	SyncedBytes    int64      `json:"synced_bytes"`
	LastFlushAt    *time.Time `json:"last_flush_at,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	LastErrorAt    *time.Time `json:"last_error_at,omitempty"`
	Attempts       int        `json:"attempts,omitempty"`
	NextAttemptAt  *time.Time `json:"next_attempt_at,omitempty"`
	FlushInterval  float64    `json:"flush_interval_seconds"`
	RetainUntil    *time.Time `json:"retain_until,omitempty"`
	FinalFlushDone bool       `json:"final_flush_done,omitempty"`
	// Journal is how this server finds the files commands write; absent
	// before its first reconcile of the sandbox.
	Journal *SyncJournal `json:"journal,omitempty"`
}

// SyncJournal is how the sync finds files commands write
// (docs/storage.md): the sandbox's change journal, or full walks.
type SyncJournal struct {
	// State is "watching" (the sidecar's journal says what changed) or
	// "walking" (each reconcile walks the whole workspace).
	State string `json:"state"`
	// Reason says why walking: "over_budget" (more directories than the
	// journal's budget), "unavailable" (no inotify instance or watch to
	// be had: fs.inotify.max_user_instances or max_user_watches),
	// "unsupported" (a sidecar without a journal).
	Reason      string `json:"reason,omitempty"`
	WatchedDirs int    `json:"watched_dirs"`
	// Counters since this server started: full walks of the workspace,
	// reconciles the journal answered without one, and times it was
	// asked what changed but could not tell (events lost, over budget).
	FullWalks int64 `json:"full_walks"`
	Checks    int64 `json:"checks"`
	Fallbacks int64 `json:"fallbacks"`
}

// StoredFile is one file of a sandbox's workspace in object storage.
type StoredFile struct {
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

// StoredFiles answers GET /v1/sandboxes/{id}/storage/files.
type StoredFiles struct {
	SessionID string       `json:"session_id"`
	Files     []StoredFile `json:"files"`
}
