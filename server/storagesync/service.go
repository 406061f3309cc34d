package storagesync

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Defaults (docs/storage.md).
const (
	DefaultInterval       = 30 * time.Second   // a file is stored within this of being written
	DefaultStableFor      = 2 * time.Second    // a file unchanged this long is uploaded (at most Interval/4)
	DefaultFinalTimeout   = 60 * time.Second   // bound of the final flush on destroy
	DefaultFullWalkEvery  = 2 * time.Minute    // safety-net full walk of a sandbox whose journal watches
	DefaultJournalMaxDirs = 4096               // directories a sandbox's change journal watches
	MaxJournalMaxDirs     = api.MaxJournalDirs // the most a sidecar watches (it clamps a larger budget)
	DefaultBandwidth      = 32 << 20           // bytes per second, all uploads together
	DefaultWorkers        = 2                  // sandboxes flushed at once
	MaxBackoff            = 2 * time.Minute    // longest wait between failed flushes
	backoffBase           = time.Second        // first wait after a failed flush
	bundleFiles           = 512                // files per bundle read from a sidecar
	Root                  = "/workspace"       // the synced tree; /tmp and the rest never are
	flushTimeout          = 10 * time.Minute   // one flush of a running sandbox
	janitorEvery          = 10 * time.Minute   // retention sweeps
	maxErrorLen           = 500                // of an error kept for …/sync
	tick                  = 500 * time.Millisecond
	smallFile             = 1 << 20 // read whole and put concurrently
	putConcurrency        = 32      // puts and deletes at once, per flush
	largeConcurrency      = 2       // large files streamed at once, per flush
	recordBatch           = 256     // stored files recorded per transaction
)

// DefaultIgnore is the reference's ignore list: directory names skipped at
// any depth (version control, dependencies, caches and build outputs).
var DefaultIgnore = []string{
	".git", ".hg", ".svn", "node_modules", "__pycache__", ".cache", ".venv", "venv",
	".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".next", ".nuxt",
	"dist", "build", "target", ".gradle", ".terraform",
}

// Files reads a sandbox's workspace for the sync, through the sidecar's
// file API whatever the driver (the control plane implements it): a tree
// that reports links and never follows them, and a tar of chosen files,
// each reached without a link.
type Files interface {
	Tree(ctx context.Context, sandboxID string, q TreeQuery) (api.TreeResult, error)
	Bundle(ctx context.Context, sandboxID, root string, paths []string) (io.ReadCloser, error)
}

// TreeQuery is one GET /files/tree of a sidecar: the tree under Root,
// directories named in Skip left out. With Journal, the sidecar's change
// journal answers (journal.go): what changed since the token Since (""
// for a full walk that starts it), watching at most MaxDirs directories.
type TreeQuery struct {
	Root    string
	Skip    []string
	Journal bool
	Since   string
	MaxDirs int
}

// Deps is what the sync needs of the control plane.
type Deps struct {
	Backend Backend
	Store   Store
	Files   Files
	Log     *slog.Logger
	Now     func() time.Time
	// Audit records the final flush in the sandbox's audit log.
	Audit func(ctx context.Context, sb *model.Sandbox, op string, detail map[string]any) error
	// Prefix starts every key: <Prefix>/<account>/<sandbox>/<path>.
	Prefix string
	// Ignore lists directory names never synced (DefaultIgnore when nil;
	// empty and non-nil syncs everything).
	Ignore []string
	// Interval is the flush interval (DefaultInterval): a file is in the
	// store within it of being written. Each sandbox is reconciled every
	// quarter of it, which leaves half of it to the upload.
	Interval time.Duration
	// StableFor is how long a file a command wrote must stay unchanged
	// before it is uploaded (DefaultStableFor, at most a quarter of
	// Interval); a write through the API and the final flush do not wait.
	StableFor time.Duration
	// FullWalkEvery is how often a sandbox whose sidecar journal says
	// what changed is walked in full anyway (DefaultFullWalkEvery, at
	// least Interval); JournalMaxDirs is the journal's directory budget
	// (DefaultJournalMaxDirs), past which every reconcile walks.
	FullWalkEvery  time.Duration
	JournalMaxDirs int
	// FinalTimeout bounds the final flush on destroy (DefaultFinalTimeout).
	FinalTimeout time.Duration
	// Bandwidth caps upload bytes per second, all sandboxes together
	// (DefaultBandwidth); Workers caps sandboxes flushed at once.
	Bandwidth int64
	Workers   int
	// Retention is how long a destroyed sandbox's files are kept (0:
	// until DELETE …/storage).
	Retention time.Duration
	// Secrets are the backend's credentials, cut out of any error kept
	// or logged.
	Secrets []string
}

// Service syncs sandboxes' workspaces to the backend.
type Service struct {
	d         Deps
	scan      time.Duration // how often each sandbox is reconciled
	stable    time.Duration // how long a file must stay unchanged
	limit     *rate.Limiter
	redact    func(string) string
	wake      chan struct{}
	mu        sync.Mutex
	locks     map[string]*sync.Mutex // one flush of a sandbox at a time
	scanned   map[string]time.Time   // when each sandbox was last reconciled
	busy      map[string]bool        // flushes under way in the worker
	settles   map[string]time.Time   // when a file found changing will have settled
	tracks    map[string]*tracked    // each sandbox's journal token and counters (journal.go)
	verified  map[string]bool        // sandboxes whose index this server checked against the bucket (verify.go)
	names     map[string]bool        // sandboxes whose prefix this server's flush found or made escaped (names.go)
	fullEvery time.Duration          // FullWalkEvery
}

// New returns the sync; Backend, Store, Files, Log and Now are required.
func New(d Deps) (*Service, error) {
	if d.Backend == nil || d.Store == nil || d.Files == nil || d.Log == nil || d.Now == nil {
		return nil, errors.New("storagesync: a dependency is missing")
	}
	if d.Ignore == nil {
		d.Ignore = DefaultIgnore
	}
	if d.Interval <= 0 {
		d.Interval = DefaultInterval
	}
	if d.StableFor <= 0 {
		d.StableFor = DefaultStableFor
	}
	if d.FullWalkEvery <= 0 {
		d.FullWalkEvery = DefaultFullWalkEvery
	}
	if d.JournalMaxDirs <= 0 {
		d.JournalMaxDirs = DefaultJournalMaxDirs
	}
	if d.FinalTimeout <= 0 {
		d.FinalTimeout = DefaultFinalTimeout
	}
	if d.Bandwidth <= 0 {
		d.Bandwidth = DefaultBandwidth
	}
	if d.Workers <= 0 {
		d.Workers = DefaultWorkers
	}
	d.Prefix = strings.Trim(d.Prefix, "/")
	burst := int(min(d.Bandwidth, 1<<20))
	return &Service{
		d: d, scan: max(d.Interval/4, tick), stable: min(d.StableFor, d.Interval/4), limit: rate.NewLimiter(rate.Limit(d.Bandwidth), burst), redact: redactor(append(slices.Clone(d.Secrets), backendSecrets(d.Backend)...)),
		wake: make(chan struct{}, 1), locks: map[string]*sync.Mutex{}, scanned: map[string]time.Time{}, busy: map[string]bool{}, settles: map[string]time.Time{},
		tracks: map[string]*tracked{}, verified: map[string]bool{}, names: map[string]bool{}, fullEvery: max(d.FullWalkEvery, d.Interval),
	}, nil
}

// Kind names the backend.
func (s *Service) Kind() string { return s.d.Backend.Kind() }

// Interval is the flush interval.
func (s *Service) Interval() time.Duration { return s.d.Interval }

// prefixOf is the key prefix of a sandbox's files, ending in "/".
func (s *Service) prefixOf(accountID, sandboxID string) string {
	return path.Join(s.d.Prefix, accountID, sandboxID) + "/"
}

// lock serializes flushes of one sandbox (the worker, a forced flush and
// the final one).
func (s *Service) lock(id string) func() {
	s.mu.Lock()
	m, ok := s.locks[id]
	if !ok {
		m = &sync.Mutex{}
		s.locks[id] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Created starts syncing a sandbox that was just created.
func (s *Service) Created(ctx context.Context, sb *model.Sandbox) {
	now := s.d.Now()
	if err := s.d.Store.StartSync(ctx, &State{SandboxID: sb.ID, AccountID: sb.AccountID, State: StateSyncing, CreatedAt: now, NextAttemptAt: now}); err != nil {
		s.d.Log.ErrorContext(ctx, "start storage sync", "sandbox", sb.ID, "err", err)
		return
	}
	s.markVerified(sb.ID) // nothing stored yet: no index to check
}

// Committed is told of each audit entry once committed, before its
// operation is acknowledged: a write through the file API is queued then,
// so a server killed right after loses no acknowledged file.
func (s *Service) Committed(ctx context.Context, e *model.ExecLogEntry) {
	switch e.Operation {
	case "file_create", "str_replace", "file_upload", "archive_upload":
	default:
		return
	}
	p := detailPath(e.Detail)
	rel, ok := workspaceRel(p)
	if !ok {
		return
	}
	if err := s.d.Store.EnqueueSync(ctx, e.SandboxID, rel, s.d.Now()); err != nil {
		s.d.Log.ErrorContext(ctx, "queue storage sync", "sandbox", e.SandboxID, "err", err)
		return
	}
	s.poke()
}

// workspaceRel is p relative to the workspace ("" for the workspace
// itself); false for a path outside it (never synced).
func workspaceRel(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if !strings.HasPrefix(p, "/") {
		p = Root + "/" + p
	}
	p = path.Clean(p)
	if p == Root {
		return "", true
	}
	rel, ok := strings.CutPrefix(p, Root+"/")
	if !ok {
		return "", false
	}
	return rel, true
}

func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// backendSecrets are the credentials of a Backend from Open.
func backendSecrets(b Backend) []string {
	if g, ok := b.(interface{ secrets() []string }); ok {
		return g.secrets()
	}
	return nil
}

// redactor returns a function that cuts the credentials and any URL query
// (a SAS token) out of an error's text.
func redactor(secrets []string) func(string) string {
	var ss []string
	for _, v := range secrets {
		if len(v) >= 4 {
			ss = append(ss, v)
		}
	}
	query := regexp.MustCompile(`\?[^\s"']*`)
	sig := regexp.MustCompile(`(?i)(sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|accountkey|sharedaccesssignature)=[^\s&;"']*`)
	return func(msg string) string {
		for _, v := range ss {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
		msg = sig.ReplaceAllString(msg, "$1=[redacted]")
		msg = query.ReplaceAllString(msg, "?[redacted]")
		if len(msg) > maxErrorLen {
			msg = msg[:maxErrorLen] + "…"
		}
		return msg
	}
}
