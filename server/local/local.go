package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/sidecar/jail"
	"golang.org/x/sys/unix"
)

// DefaultHealthTimeout bounds Create's wait for a new sidecar's /health.
const DefaultHealthTimeout = 30 * time.Second

// Config configures the local driver.
type Config struct {
	StateDir    string       // each sandbox lives in StateDir/sandboxes/<id>
	SidecarPath string       // the boxkite-sidecar binary; "" means next to this executable, else $PATH
	Log         *slog.Logger // nil means slog.Default()

	// UIDBase is the first host uid (and gid) of the range a root driver maps
	// into each jail; 0 means jail.DefaultHostIDBase. Ignored when not root:
	// then the jail maps only the caller's own ids.
	UIDBase int
	// TmpSize is the size of each sandbox's /tmp and /dev/shm in bytes; 0
	// means jail.DefaultTmpSize.
	TmpSize int64
	// HealthTimeout bounds how long Create waits for /health; 0 means
	// DefaultHealthTimeout.
	HealthTimeout time.Duration
}

// Driver runs each sandbox as a jailed boxkite-sidecar process. A Driver is
// safe for concurrent use. Its sandboxes outlive it: a new Driver on the same
// StateDir finds them with List and can Delete them.
type Driver struct {
	cfg     Config
	log     *slog.Logger
	sidecar string
	root    bool // the driver runs as root and maps a uid range

	mu       sync.Mutex
	children map[string]<-chan struct{} // jails this process started, closed once reaped
}

var _ server.Driver = (*Driver)(nil)

// New returns a Driver for cfg. It creates StateDir/sandboxes if missing.
func New(cfg Config) (*Driver, error) {
	d := &Driver{cfg: cfg, log: cfg.Log, root: os.Geteuid() == 0, children: map[string]<-chan struct{}{}}
	if d.log == nil {
		d.log = slog.Default()
	}
	if cfg.StateDir == "" {
		return nil, errors.New("new local driver: empty state dir")
	}
	if d.cfg.UIDBase == 0 {
		d.cfg.UIDBase = jail.DefaultHostIDBase
	}
	if d.cfg.HealthTimeout == 0 {
		d.cfg.HealthTimeout = DefaultHealthTimeout
	}
	path, err := findSidecar(cfg.SidecarPath)
	if err != nil {
		return nil, fmt.Errorf("new local driver: %w", err)
	}
	d.sidecar = path
	if err := os.MkdirAll(d.sandboxesDir(), 0o700); err != nil {
		return nil, fmt.Errorf("new local driver: %w", err)
	}
	return d, nil
}

// findSidecar resolves the sidecar binary: as configured, else next to the
// running executable (go install puts them side by side), else on $PATH.
func findSidecar(path string) (string, error) {
	if path == "" {
		if exe, err := os.Executable(); err == nil {
			sibling := filepath.Join(filepath.Dir(exe), "boxkite-sidecar")
			if _, err := os.Stat(sibling); err == nil {
				path = sibling
			}
		}
	}
	if path == "" {
		path = "boxkite-sidecar"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("find sidecar binary: %w", err)
	}
	return filepath.Abs(p)
}

func (d *Driver) sandboxesDir() string        { return filepath.Join(d.cfg.StateDir, "sandboxes") }
func (d *Driver) sandboxDir(id string) string { return filepath.Join(d.sandboxesDir(), id) }

// validID keeps an id safe as a single path element.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// Create starts a jailed sidecar and returns once it answers /health. On
// failure nothing of the sandbox is left behind and the error carries the
// tail of the sidecar's log.
func (d *Driver) Create(ctx context.Context, spec server.Spec) (ep server.Endpoint, err error) {
	if !validID.MatchString(spec.ID) {
		return server.Endpoint{}, fmt.Errorf("create sandbox: invalid id %q", spec.ID)
	}
	dir := d.sandboxDir(spec.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return server.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	defer func() {
		if err != nil {
			if derr := d.Delete(context.WithoutCancel(ctx), spec.ID); derr != nil {
				d.log.Error("clean up failed sandbox", "id", spec.ID, "err", derr)
			}
		}
	}()
	js, err := d.prepare(spec.ID, dir)
	if err != nil {
		return server.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	token, err := newToken()
	if err != nil {
		return server.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	ep = server.Endpoint{Network: "unix", Address: filepath.Join(js.RunDir, jail.SocketName), Token: token}
	done, err := d.start(js, token, dir)
	if err != nil {
		return server.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	if err := waitHealthy(ctx, ep, d.cfg.HealthTimeout, done); err != nil {
		return server.Endpoint{}, fmt.Errorf("create sandbox %s: %w%s", spec.ID, err, logTail(dir))
	}
	d.log.Debug("sandbox created", "id", spec.ID)
	return ep, nil
}

// prepare makes the sandbox's host directories. As root they belong to the
// jail's mapped ids: the workspace and outputs to the sandbox user, the run
// dir (0700) to the jail's root, so the sandbox user cannot reach the socket.
func (d *Driver) prepare(id, dir string) (jail.Spec, error) {
	js := jail.Spec{
		ID:        id,
		Hostname:  "sandbox",
		Workspace: filepath.Join(dir, "workspace"),
		RunDir:    filepath.Join(dir, "run"),
		Outputs:   filepath.Join(dir, "outputs"),
		UID:       jail.DefaultUID,
		GID:       jail.DefaultUID,
		TmpSize:   d.cfg.TmpSize,
	}
	if d.root {
		js.HostIDBase = d.cfg.UIDBase
	}
	dirs := []struct {
		path     string
		mode     os.FileMode
		uid, gid int
	}{
		{js.Workspace, 0o755, js.UID, js.GID},
		{js.Outputs, 0o755, js.UID, js.GID},
		{js.RunDir, 0o700, 0, 0},
	}
	for _, x := range dirs {
		if err := os.Mkdir(x.path, x.mode); err != nil {
			return js, err
		}
		if !d.root {
			continue // everything is the caller's; the jail's root is the caller
		}
		if err := os.Chown(x.path, js.HostIDBase+x.uid, js.HostIDBase+x.gid); err != nil {
			return js, err
		}
	}
	return js, nil
}

// start launches the jail, records its state and reaps it in the background.
func (d *Driver) start(js jail.Spec, token, dir string) (<-chan struct{}, error) {
	logf, err := os.OpenFile(filepath.Join(dir, "sidecar.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the jail holds its own copy
	cmd := &exec.Cmd{Path: d.sidecar, Args: []string{"boxkite-sidecar", "init"}, Stdout: logf, Stderr: logf}
	if err := jail.Start(cmd, js, token); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // reap; the exit status is in sidecar.log if anywhere
		close(done)
	}()
	d.mu.Lock()
	d.children[js.ID] = done
	d.mu.Unlock()

	pid := cmd.Process.Pid
	st := state{PID: pid, Socket: filepath.Join(js.RunDir, jail.SocketName), Token: token}
	if st.StartTime, err = startTime(pid); err == nil {
		err = writeState(dir, st)
	}
	if err != nil {
		// Without a state file nothing could find the jail again.
		_ = cmd.Process.Kill()
		<-done
		return nil, err
	}
	return done, nil
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Delete kills the sandbox's processes and removes its state. A gone sandbox
// is not an error.
func (d *Driver) Delete(ctx context.Context, id string) error {
	if !validID.MatchString(id) {
		return nil // no such sandbox can exist
	}
	dir := d.sandboxDir(id)
	st, err := readState(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Never started, or half removed: just the files.
	case err != nil:
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	default:
		if err := d.kill(ctx, id, st); err != nil {
			return fmt.Errorf("delete sandbox %s: %w", id, err)
		}
	}
	d.mu.Lock()
	delete(d.children, id)
	d.mu.Unlock()
	if err := removeAll(dir); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	return nil
}

// kill SIGKILLs the jail's init, which takes its whole PID namespace down,
// and waits until the process is gone.
func (d *Driver) kill(ctx context.Context, id string, st state) error {
	fd, err := killPID(st)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	d.mu.Lock()
	done := d.children[id]
	d.mu.Unlock()
	if done != nil { // our child: wait until it is reaped, not just dead
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Not our child (this driver restarted): whoever inherited it reaps it.
	return waitPidfd(ctx, fd)
}

// List reports the sandboxes found in the state directory. A sandbox whose
// jail is gone (or whose state file is missing) is reported with Alive false.
func (d *Driver) List(ctx context.Context) ([]server.Observed, error) {
	entries, err := os.ReadDir(d.sandboxesDir())
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var out []server.Observed
	for _, e := range entries {
		if !e.IsDir() || !validID.MatchString(e.Name()) {
			continue
		}
		o := server.Observed{ID: e.Name()}
		if st, err := readState(d.sandboxDir(e.Name())); err == nil {
			o.Endpoint = server.Endpoint{Network: "unix", Address: st.Socket, Token: st.Token}
			o.Alive = alive(st)
		}
		out = append(out, o)
	}
	return out, nil
}

// Shutdown deletes every sandbox of the state directory concurrently,
// whether or not this Driver started it. `boxkite down` calls it on SIGTERM.
func (d *Driver) Shutdown(ctx context.Context) error {
	obs, err := d.List(ctx)
	if err != nil {
		return err
	}
	errs := make([]error, len(obs))
	var wg sync.WaitGroup
	for i, o := range obs {
		wg.Go(func() { errs[i] = d.Delete(ctx, o.ID) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
