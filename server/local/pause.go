package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/criu"
	"github.com/boxkite/boxkite/server/model"
)

// Pause and resume (issue 22). freeze stops the jail's whole cgroup with
// the freezer (cgroup v2's cgroup.freeze, or the v1 freezer hierarchy):
// every process stops at once and keeps its memory, and resume thaws it.
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
		api.PauseFilesystem: "not implemented by the local driver yet",
		api.PauseCheckpoint: d.criu.why(),
	}
}

// Pause implements server.PauseDriver.
func (d *Driver) Pause(_ context.Context, id, mode string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("pause sandbox: invalid id %q", id)
	}
	if why := d.PauseModes()[mode]; why != "" {
		return fmt.Errorf("pause sandbox %s: mode %s: %s", id, mode, why)
	}
	dir := d.sandboxDir(id)
	st, err := readState(dir)
	if err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	if st.Paused != "" && st.Paused != mode {
		return fmt.Errorf("pause sandbox %s: already paused with %s", id, st.Paused)
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
func (d *Driver) Resume(_ context.Context, id string, _ func(net.Listener)) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("resume sandbox: invalid id %q", id)
	}
	dir := d.sandboxDir(id)
	st, err := readState(dir)
	if err != nil {
		return fmt.Errorf("resume sandbox %s: %w", id, err)
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
