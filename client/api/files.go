package api

import "time"

// CodePermissionDenied (403): a file route was asked to read, write,
// replace or create something the sandbox user (uid 1001) may not. File
// work runs with that user's rights, so a route reaches exactly what a
// command in the sandbox could.
const CodePermissionDenied = "permission_denied"

// CodeNotADirectory (400): a route that works on a directory (ls, watch,
// an archive's download or its destination, a directory to create) was
// given a path that is a file.
const CodeNotADirectory = "not_a_directory"

// Limits of the file routes (reference §2.3).
const (
	MaxFileContent      = 10 << 20  // bytes of FileCreateRequest.Content, StrReplaceRequest strings and a file str-replace edits
	MaxViewOutput       = 100 << 10 // bytes of ViewResult.Content before it is cut and marked "\n... (truncated)"
	MaxViewFile         = 25 << 20  // bytes of a file /view reads; larger files need exec
	DefaultGrepMatches  = 500
	MaxGrepMatches      = 5000
	DefaultWatchSeconds = 10.0
	MinWatchSeconds     = 0.1
	MaxWatchSeconds     = 60.0
)

// FileCreateRequest is the body of /file-create: write Content to Path,
// creating parent directories and overwriting an existing file.
type FileCreateRequest struct {
	Path        string `json:"path"`
	Content     string `json:"content"`
	Description string `json:"description,omitempty"`
}

// FileCreateResult answers /file-create. Path is the virtual path
// (/workspace/…); Size counts UTF-8 bytes; Created is false when the
// write replaced a file that was there.
type FileCreateResult struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Created bool   `json:"created"`
}

// ViewRequest is the body of /view. ViewRange, when it has exactly two
// elements, selects lines [start, end], 1-indexed and inclusive; end -1
// means to the end of the file.
type ViewRequest struct {
	Path        string `json:"path"`
	ViewRange   []int  `json:"view_range,omitempty"`
	Description string `json:"description,omitempty"`
}

// ViewResult answers /view. For a file, Lines is the file's total line count
// and Entries is null; for a directory, Content is "", Lines 0 and Entries
// the sorted names in it.
type ViewResult struct {
	Content     string   `json:"content"`
	Lines       int      `json:"lines"`
	IsDirectory bool     `json:"is_directory"`
	Entries     []string `json:"entries"`
}

// StrReplaceRequest is the body of /str-replace. OldStr must occur exactly
// once unless ReplaceAll is set.
type StrReplaceRequest struct {
	Path        string `json:"path"`
	OldStr      string `json:"old_str"`
	NewStr      string `json:"new_str"`
	ReplaceAll  bool   `json:"replace_all,omitempty"`
	Description string `json:"description,omitempty"`
}

// StrReplaceResult answers /str-replace. Zero occurrences is a result
// (Replaced false), not an error.
type StrReplaceResult struct {
	Path        string `json:"path"`
	Replaced    bool   `json:"replaced"`
	Occurrences int    `json:"occurrences"`
}

// PresentFilesRequest is the body of /present-files.
type PresentFilesRequest struct {
	Filepaths []string `json:"filepaths"`
}

// PresentedFile is one file handed to the user by /present-files.
type PresentedFile struct {
	FilePath    string `json:"file_path"`   // virtual path under /mnt/user-data/outputs
	StorageKey  string `json:"storage_key"` // "outputs/<name>"
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
}

// PresentFilesResult answers /present-files. CopyOperations describes each
// copy into the outputs directory as "<from> -> <to>".
type PresentFilesResult struct {
	Files          []PresentedFile `json:"files"`
	CopyOperations []string        `json:"copy_operations"`
}

// LsRequest is the body of /ls; Path defaults to "/" (the workspace) and
// names a directory: a file is refused (400 not_a_directory), a missing
// path is not found (404 not_found).
type LsRequest struct {
	Path string `json:"path,omitempty"`
}

// LsEntry is one directory entry from /ls or one /glob match. Directory
// paths end with "/" and have Size 0.
type LsEntry struct {
	Path       string    `json:"path"`
	IsDir      bool      `json:"is_dir"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

// LsResult answers /ls: the directory's entries sorted by path, an empty
// list for an empty directory.
type LsResult struct {
	Entries []LsEntry `json:"entries"`
}

// GlobRequest is the body of /glob. Pattern is matched recursively under
// Path (default "/"), like Python's Path.rglob; "**" spans directories.
type GlobRequest struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

// GlobMatch is one file matched by /glob (IsDir is always false).
type GlobMatch = LsEntry

// GlobResult answers /glob, matches sorted by path. Truncated is set when
// the match cap cut the list short.
type GlobResult struct {
	Matches   []GlobMatch `json:"matches"`
	Truncated bool        `json:"truncated,omitempty"`
}

// GrepRequest is the body of /grep. Pattern is an RE2 regular expression;
// Glob (fnmatch) filters files by their path relative to Path, their
// workspace-relative path or their base name; MaxMatches is clamped to
// 1..MaxGrepMatches, 0 meaning DefaultGrepMatches.
type GrepRequest struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	MaxMatches int    `json:"max_matches,omitempty"`
}

// GrepMatch is one matching line; Line is 1-based.
type GrepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// GrepResult answers /grep. An invalid pattern or a timeout is reported in
// Error with status 200, so agents can act on it.
type GrepResult struct {
	Matches   []GrepMatch `json:"matches"`
	Error     string      `json:"error,omitempty"`
	Truncated bool        `json:"truncated"`
}

// Watch event names in WatchChange.Event.
const (
	WatchCreated   = "created"
	WatchModified  = "modified"
	WatchDeleted   = "deleted"
	WatchMovedFrom = "moved_from"
	WatchMovedTo   = "moved_to"
)

// WatchRequest is the body of /watch: wait up to TimeoutSeconds (0 means
// DefaultWatchSeconds; clamped to MinWatchSeconds..MaxWatchSeconds) for
// changes in the directory Path, and in its subdirectories when Recursive.
type WatchRequest struct {
	Path           string  `json:"path,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	Recursive      bool    `json:"recursive,omitempty"`
}

// WatchChange is one change; Path is relative to the watched directory.
// Path "." with Event "deleted" is the watched directory itself, removed
// or moved away (docs/files.md).
type WatchChange struct {
	Path  string `json:"path"`
	Event string `json:"event"`
}

// WatchResult answers /watch with the first batch of changes, or none and
// TimedOut.
type WatchResult struct {
	Changes  []WatchChange `json:"changes"`
	TimedOut bool          `json:"timed_out"`
}

// WatchStreamEvent is one line of the sidecar's POST /watch/stream (the
// body is a WatchRequest, TimeoutSeconds 0 meaning until the client
// leaves): armed first, once the watch is in place, then a changes line per
// batch and keepalive lines while nothing happens.
type WatchStreamEvent struct {
	Type    string        `json:"type"`
	Changes []WatchChange `json:"changes,omitempty"`
}

// WatchStreamEvent types.
const (
	WatchStreamArmed     = "armed"
	WatchStreamChanges   = "changes"
	WatchStreamKeepAlive = "keepalive"
)

// FileWriteResult answers PUT /files/raw.
type FileWriteResult struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// ArchiveResult answers POST /files/archive: how many regular files and
// content bytes were extracted.
type ArchiveResult struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}
