package servertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/images"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// Server is a running control plane for one test.
type Server struct {
	BaseURL  string // e.g. http://127.0.0.1:41234, no trailing slash
	APIKey   string // an admin key of Account
	Account  *model.Account
	Store    model.Store    // the store the server uses; tests may inspect or seed it
	Server   *server.Server // the control plane itself
	Driver   *local.Driver
	StateDir string // the driver's state directory
	// Images keeps images in the store (WithImages); nil without.
	Images *images.Manager

	cfg       server.Config
	log       *slog.Logger
	driverCfg func(*local.Config) // from WithDriverConfig; nil means none
	stop      func()              // stops serving (HTTP and background work) but not the sandboxes
	dsn       string
	imageDir  string // from WithImages
	imageOpts []images.Option
	secrets   *secrets.Keyring // from WithSecrets; nil means none
	reach     secrets.Config   // from WithSecrets: its hooks for tests
}

// Option changes how New builds the server.
type Option func(*options)

type options struct {
	stateDir  string
	dsn       string
	cfg       server.Config
	log       *slog.Logger
	driverCfg func(*local.Config)
	imageDir  string
	imageOpts []images.Option
	secrets   bool
	reach     secrets.Config
}

// WithSecrets gives the server a secrets broker (server/secrets) with a
// fresh key, kept across Restart. Of reach only the hooks for tests are
// used (PermitForTests, DialForTests, RootCAsForTests, Resolver): they let
// its requests reach a test's own HTTPS server on 127.0.0.1.
func WithSecrets(reach secrets.Config) Option {
	return func(o *options) {
		o.secrets = true
		o.reach = secrets.Config{
			PermitForTests: reach.PermitForTests, DialForTests: reach.DialForTests,
			RootCAsForTests: reach.RootCAsForTests, Resolver: reach.Resolver,
		}
	}
}

// WithImages keeps sandbox images under dir, their records in the
// server's store: each start (Restart too) opens a new images.Manager on
// both, as boxkite-server does.
func WithImages(dir string, opts ...images.Option) Option {
	return func(o *options) { o.imageDir, o.imageOpts = dir, opts }
}

// WithStateDir puts the local driver's state (sandbox disks, volumes) in
// dir, which the test made and removes, and the database in a directory
// of its own: the fault suite gives the driver a small filesystem to fill.
func WithStateDir(dir string) Option { return func(o *options) { o.stateDir = dir } }

// WithDBPath keeps the SQLite database at path (the fault suite puts it
// on a filesystem it can make read-only).
func WithDBPath(path string) Option { return func(o *options) { o.dsn = "sqlite:" + path } }

// WithDSN opens the store at dsn (a postgres:// URL, say from
// PostgresDSN) instead of SQLite in a temporary directory.
func WithDSN(dsn string) Option { return func(o *options) { o.dsn = dsn } }

// WithConfig sets the server configuration (BootstrapAPIKey and
// DriverName are always set by New).
func WithConfig(cfg server.Config) Option { return func(o *options) { o.cfg = cfg } }

// WithDriverConfig lets edit change the local driver's configuration (size
// presets, storage quota, ...) after New has set StateDir, SidecarPath and
// Log. Restart applies it again.
func WithDriverConfig(edit func(*local.Config)) Option {
	return func(o *options) { o.driverCfg = edit }
}

// WithLogger sends the server's and driver's logs to log instead of t.Log.
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// New starts a control plane on a loopback httptest server with SQLite in
// a temporary directory and the real local driver (so the test process
// needs what the driver needs: root, or unprivileged user namespaces).
// Everything is torn down when the test ends, sandboxes included.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(newTLogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// A short path: unix socket paths under it must stay below 108 bytes,
	// which a t.TempDir() named after a long test may not.
	stateDir, dsn := o.stateDir, o.dsn
	if stateDir == "" || dsn == "" {
		dir, err := os.MkdirTemp("", "bxk-")
		if err != nil {
			t.Fatalf("servertest: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if stateDir == "" {
			stateDir = dir
		}
		if dsn == "" {
			dsn = "sqlite:" + filepath.Join(dir, "boxkite.db")
		}
	}

	s := &Server{
		APIKey:    model.NewAPIKey(),
		StateDir:  stateDir,
		cfg:       o.cfg,
		log:       o.log,
		driverCfg: o.driverCfg,
		imageDir:  o.imageDir,
		imageOpts: o.imageOpts,
		dsn:       dsn,
		reach:     o.reach,
	}
	if o.secrets {
		kr, err := secrets.ParseKeyring(secrets.NewKey())
		if err != nil {
			t.Fatalf("servertest: %v", err)
		}
		s.secrets = kr
	}
	s.cfg.BootstrapAPIKey = s.APIKey
	s.cfg.DriverName = "local"
	driver, err := s.newDriver(t)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	s.Driver = driver
	// Registered before start, so it runs after the server stops (LIFO).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Driver.Shutdown(ctx); err != nil {
			t.Errorf("servertest: stop sandboxes: %v", err)
		}
	})
	s.start(t)
	return s
}

// start opens the store, builds the server on s.Driver, runs Init and
// serves. Cleanups stop serving and close the store.
func (s *Server) start(t testing.TB) {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), s.dsn)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	cfg := s.cfg
	var imgs *images.Manager
	if s.imageDir != "" {
		if imgs, err = images.New(s.imageDir, s.log.With("component", "images"), append(s.imageOpts, images.WithRecords(st), images.WithJailer(s.Driver))...); err != nil {
			st.Close()
			t.Fatalf("servertest: %v", err)
		}
		cfg.Images = imgs
	}
	if s.secrets != nil {
		sc := s.reach
		sc.Keyring, sc.Log = s.secrets, s.log
		cfg.Secrets = secrets.New(st, sc)
	}
	srv, err := server.New(cfg, st, s.Driver, s.log)
	if err != nil {
		st.Close()
		t.Fatalf("servertest: %v", err)
	}
	// The web console at /ui/, as boxkite-server serves it by default.
	ui, err := console.New(console.Config{API: srv, Log: s.log, LinkKey: srv.ConsoleLinkKey})
	if err != nil {
		st.Close()
		t.Fatalf("servertest: %v", err)
	}
	srv.MountConsole(ui)
	if err := srv.Init(context.Background()); err != nil {
		st.Close()
		t.Fatalf("servertest: init: %v", err)
	}
	_, acct, err := st.APIKeyByHash(context.Background(), model.HashAPIKey(s.APIKey))
	if err != nil {
		st.Close()
		t.Fatalf("servertest: bootstrap key: %v", err)
	}
	hs := httptest.NewServer(srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx)
	}()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			hs.CloseClientConnections()
			hs.Close()
			cancel()
			<-done
			if imgs != nil {
				_ = imgs.Close()
			}
			st.Close()
		})
	}
	t.Cleanup(s.stop)
	s.BaseURL, s.Server, s.Store, s.Account, s.Images = hs.URL, srv, st, acct, imgs
}

// Restart simulates the control plane being killed (SIGKILL) and started
// again: serving stops without touching the sandboxes, then a new server
// with a new local driver opens the same database and state directory,
// reconciles, and serves on a new BaseURL. Sandboxes whose sidecars still
// run are adopted.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	s.Start(t)
}

// Kill stops serving as a SIGKILL of the control plane would: the store
// is closed, the sandboxes keep running. Start serves again.
func (s *Server) Kill() {
	s.stop()
	s.Driver.Release() // what the process dying would close
}

// Down stops the control plane as `boxkite down` does: serving stops and
// the driver ends every sandbox (Shutdown), paused ones included. Start
// serves again, as the next `boxkite up`.
func (s *Server) Down(t testing.TB) {
	t.Helper()
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Driver.Shutdown(ctx); err != nil {
		t.Fatalf("servertest: down: %v", err)
	}
	s.Driver.Release()
}

// Start starts a new server with a new local driver on the database and
// state directory of one that Kill stopped; see Restart.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	driver, err := s.newDriver(t)
	if err != nil {
		t.Fatalf("servertest: restart: %v", err)
	}
	s.Driver = driver
	s.start(t)
}

func (s *Server) newDriver(t testing.TB) (*local.Driver, error) {
	cfg := local.Config{StateDir: s.StateDir, SidecarPath: SidecarBinary(t), Log: s.log.With("driver", "local")}
	if s.driverCfg != nil {
		s.driverCfg(&cfg)
	}
	return local.New(cfg)
}

// tLogWriter sends log lines to t.Log, so they show only for failing
// tests, until the test's cleanups end. A driver's goroutine may still log
// after that (the clone pool's trim after a removal: "trim …: no such file
// or directory" once the state directory is gone), and t.Log after a
// test completed panics, failing the whole package; those lines are
// dropped. The mutex keeps a line from reaching t.Log once the last
// cleanup has run.
type tLogWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

// LogWriter returns a writer for a logger of t's: lines go to t.Log until
// t's cleanups end, and are dropped after (tLogWriter). Call it before
// starting what logs, so that its cleanup runs after that one's stop.
func LogWriter(t testing.TB) io.Writer { return newTLogWriter(t) }

// newTLogWriter registers its cleanup first, so it runs after every
// cleanup registered later (the server's and the driver's stops).
func newTLogWriter(t testing.TB) *tLogWriter {
	w := &tLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

func (w *tLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(p[:len(p)-min(len(p), 1)])) // drop the newline t.Log adds back
	}
	return len(p), nil
}

// sidecarBuild is the one boxkite-sidecar build of this test process; a
// package-level cache because `go build` costs seconds and every test of
// the process can share its result.
var sidecarBuild struct {
	once sync.Once
	path string
	err  error
}

// SidecarBinaryEnv names a prebuilt boxkite-sidecar to use instead of
// building one (it must be executable by every user: the jail's root is
// an unprivileged host uid).
const SidecarBinaryEnv = "BOXKITE_TEST_SIDECAR"

// SidecarBinary returns a boxkite-sidecar built from this module, once per
// test process, into a world-executable directory under os.TempDir().
func SidecarBinary(t testing.TB) string {
	t.Helper()
	sidecarBuild.once.Do(func() { sidecarBuild.path, sidecarBuild.err = buildSidecar() })
	if sidecarBuild.err != nil {
		t.Fatalf("servertest: %v", sidecarBuild.err)
	}
	return sidecarBuild.path
}

// moduleTag is a short hash of the directory of the go.mod above the
// working directory (a test's is its package's).
func moduleTag() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:4])
}

func buildSidecar() (string, error) {
	if p := os.Getenv(SidecarBinaryEnv); p != "" {
		return filepath.Abs(p)
	}
	// One fixed directory per user, so repeated runs reuse it instead of
	// leaving a binary behind each time. It must be ours: a directory in
	// /tmp that someone else made could hand us their binary.
	// Named after the module's directory too: checkouts side by side
	// (worktrees) build different sidecars and must not swap them.
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("boxkite-servertest-%d-%s", os.Geteuid(), moduleTag()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("build boxkite-sidecar: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("build boxkite-sidecar: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("build boxkite-sidecar: %s is not a directory only this user can write", dir)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("build boxkite-sidecar: %w", err)
	}
	// Build under a private name, then rename: test processes of other
	// packages may be doing the same at the same moment.
	tmp := filepath.Join(dir, fmt.Sprintf(".boxkite-sidecar-%d", os.Getpid()))
	cmd := exec.Command("go", "build", "-o", tmp, "github.com/boxkite/boxkite/cmd/boxkite-sidecar")
	// Static, as released: a dynamically linked sidecar keeps the host's
	// mounts alive while its jail runs (server/local TestJailsDoNotPinHostMounts).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build boxkite-sidecar: %w\n%s", err, out)
	}
	final := filepath.Join(dir, "boxkite-sidecar")
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build boxkite-sidecar: %w", err)
	}
	return final, nil
}
