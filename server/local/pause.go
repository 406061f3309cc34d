//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/criu"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// Pause and resume (issue 22). freeze stops the jail's whole cgroup with
// the freezer (cgroup v2's cgroup.freeze, or the v1 freezer hierarchy):
// every process stops at once and keeps its memory, and resume thaws it.
// filesystem ends the jail (every process, its memory, its cgroup and its
// host id range) and keeps its directory and disk, still mounted so no
// second mount of the image can ever race the first; resume starts a new
// jail on them with the same socket and token (stopJail, restartJail).
// state.json records the mode, so the storage watch (which freezes and
// thaws sandboxes while the host's disk is full) never thaws a paused
// sandbox, and a restarted driver knows it.

var _ model.PauseDriver = (*Driver)(nil)

// PauseModes implements server.PauseDriver.
func (d *Driver) PauseModes() map[string]string {
	freeze := ""
	switch {
	case d.cgroups == nil:
		freeze = "sandboxes have no cgroups here (the server is not root, or cgroups are off)"
	case !d.cgroups.CanFreeze():
		freeze = "the host mounts no freezer: neither cgroup v2 nor the v1 freezer hierarchy"
	}
	return map[string]string{
		api.PauseFreeze:     freeze,
		api.PauseFilesystem: d.filesystemWhy(),
		api.PauseCheckpoint: d.criu.why(),
	}
}

// Pause implements server.PauseDriver.
func (d *Driver) Pause(ctx context.Context, id, mode string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("pause sandbox: invalid id %q", id)
	}
	if why := d.PauseModes()[mode]; why != "" {
		return fmt.Errorf("pause sandbox %s: mode %s: %s", id, mode, why)
	}
	dir := d.sandboxDir(id)
	st, err := readPausable(dir)
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	if st.Paused != "" && st.Paused != mode {
		return fmt.Errorf("pause sandbox %s: already paused with %s", id, st.Paused)
	}
	if mode == api.PauseFilesystem {
		return d.stopJail(ctx, id, dir, st)
	}
	// Recorded first, so the storage watch does not thaw it meanwhile.
	st.Paused = mode
	if err := writeState(dir, st); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	if err := st.Cgroup.Freeze(true); err != nil {
		st.Paused = ""
		if !d.frozen.has(id) {
			_ = st.Cgroup.Freeze(false)
		}
		return errors.Join(fmt.Errorf("pause sandbox %s: %w", id, err), writeState(dir, st))
	}
	return nil
}

// Resume implements server.PauseDriver. A sandbox the storage watch also
// froze stays frozen until the host has space again.
func (d *Driver) Resume(ctx context.Context, id string, egress func(net.Listener)) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("resume sandbox: invalid id %q", id)
	}
	dir := d.sandboxDir(id)
	st, err := readPausable(dir)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	if st.Paused == api.PauseFilesystem {
		if err := d.restartJail(ctx, id, dir, st, egress); err != nil {
			return fmt.Errorf("resume sandbox %s: %w", id, err)
		}
		return nil
	}
	if st.Paused == "" && !st.Cgroup.Frozen() {
		return nil
	}
	if !d.frozen.has(id) {
		if err := st.Cgroup.Freeze(false); err != nil {
			return fmt.Errorf("resume sandbox %s: %w", id, err)
		}
	}
	st.Paused = ""
	if err := writeState(dir, st); err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	return nil
}

// readPausable reads a sandbox's state for pause or resume; a sandbox
// without one (removed by a shutdown) is model.ErrSandboxGone.
func readPausable(dir string) (state, error) {
	st, err := readState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("%w: %w", model.ErrSandboxGone, err)
	}
	return st, err
}

// criuCheck runs `criu check` once and remembers why checkpoint/restore
// cannot work here ("" when it can).
type criuCheck struct {
	once sync.Once
	res  string
}

func (c *criuCheck) why() string {
	c.once.Do(func() {
		c.res = criu.Problem()
		if c.res == "" {
			c.res = "the local driver does not checkpoint with CRIU yet"
		}
	})
	return c.res
}

// filesystemWhy says why pause mode filesystem cannot work here, or "".
func (d *Driver) filesystemWhy() string {
	if d.storage == StorageTmpfs {
		return "the workspace is a tmpfs in the sandbox's memory (no loop-mounted disk here), which ending the processes would lose"
	}
	return ""
}

// stopJail ends the jail of a sandbox, keeping its directory and disk,
// for a filesystem pause. The disk is flushed first.
func (d *Driver) stopJail(ctx context.Context, id, dir string, st state) error {
	if st.Paused == api.PauseFilesystem && (st.PID == 0 || !alive(st)) {
		return nil
	}
	if st.Jail == nil {
		return fmt.Errorf("pause sandbox %s: its state predates filesystem pauses", id)
	}
	st.Paused = api.PauseFilesystem
	if err := writeState(dir, st); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	d.loss.unwatch(id) // an end on purpose, not a loss
	if st.Cgroup.Frozen() {
		_ = st.Cgroup.Freeze(false)
	}
	if err := d.kill(ctx, id, st); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	// Flushed once nothing writes any more, so the kept disk holds
	// everything the sandbox wrote.
	if err := d.SyncDisk(ctx, id); err != nil {
		d.log.Warn("flush the disk of a sandbox paused with filesystem", "id", id, "err", err)
	}
	d.closeDisks(id)
	d.frozen.set(id, "")
	if err := st.Cgroup.Remove(ctx); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	d.mu.Lock()
	delete(d.children, id)
	d.mu.Unlock()
	d.egress.Close(id)
	st.PID, st.StartTime, st.Cgroup = 0, 0, jail.Cgroup{}
	if err := writeState(dir, st); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	return nil
}

// restartJail starts a new jail for a sandbox paused with filesystem: its
// spec as created, on its kept disk, with a fresh host id range (data at
// rest holds canonical ids, reached through idmapped mounts, so any range
// will do), a new cgroup and the same socket and token.
func (d *Driver) restartJail(ctx context.Context, id, dir string, st state, egress func(net.Listener)) (err error) {
	if st.PID != 0 && alive(st) {
		return nil // started already
	}
	js := *st.Jail
	js.ID, js.RunDir = id, filepath.Join(dir, "run")
	if js.Workspace != "" {
		js.Workspace, js.Outputs = filepath.Join(dir, diskMount, "workspace"), filepath.Join(dir, diskMount, "outputs")
	}
	p := prepared{js: js, st: st}
	if d.ids != nil {
		if p.lease, err = d.ids.Acquire(id); err != nil {
			return err
		}
		defer p.lease.Close() // the jail holds its own copy once started
		p.js.HostIDBase, p.st.HostIDBase = p.lease.Base(), p.lease.Base()
		// The run dir is the server's, group the jail's root: now the
		// new range's. It lies in the sandbox's 0700 directory, which no
		// jail reaches, so it cannot have been replaced.
		if err := os.Chown(p.js.RunDir, 0, p.lease.Base()); err != nil {
			return err
		}
	}
	for _, sock := range []struct{ dir, name string }{{dir, sidecarSocket}, {p.js.RunDir, jail.EgressSocketName}} {
		if err := removeSocket(sock.dir, sock.name); err != nil {
			return err
		}
	}
	if egress != nil {
		if err := d.listenEgress(id, p.js, egress); err != nil {
			return err
		}
	}
	if d.cgroups != nil {
		if p.st.Cgroup, err = d.cgroups.Create(d.cgroupName(id), st.Limits); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			d.egress.Close(id)
			_ = p.st.Cgroup.Remove(context.WithoutCancel(ctx))
		}
	}()
	p.st.Paused = "" // written by start, once the jail runs
	ep := model.Endpoint{Network: "unix", Address: filepath.Join(dir, sidecarSocket), Token: st.Token}
	done, err := d.start(p, st.Token, dir)
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, nil, ep, d.cfg.HealthTimeout, done); err != nil {
		return fmt.Errorf("%w%s", err, logTail(dir))
	}
	d.watchSandbox(id)
	d.openDisks(id)
	return nil
}
