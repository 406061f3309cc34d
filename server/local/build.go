//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// validBuildID keeps a build's id safe as a cgroup name.
var validBuildID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// RunBuild runs an image build (server/images) in a jail like a
// sandbox's: the same user namespace mapping, seccomp filter, rlimits and
// the default size's cgroup limits, with jail.Build's differences. It
// calls prepare with the host id the jail's root maps to; prepare makes
// the build's root (owned through that mapping) and returns the spec,
// Build and Image set, which RunBuild completes with the ids and limits.
//
// RunBuild starts the jail from the calling goroutine's thread, which
// must be locked (runtime.LockOSThread): the jail copies that thread's
// mount namespace, where prepare may have mounted the root, and joins its
// network namespace (jail.Build). It returns once the jail has exited,
// killing it when ctx ends; out gets the steps' output.
func (d *Driver) RunBuild(ctx context.Context, id string, prepare func(hostIDBase int) (jail.Spec, error), out io.Writer) error {
	if !validBuildID.MatchString(id) {
		return fmt.Errorf("run build: invalid id %q", id)
	}
	if !d.root {
		return errors.New("run build: image builds need the server to run as root")
	}
	// A range of its own, as a sandbox has: install scripts run in it.
	lease, err := d.ids.Acquire(id)
	if err != nil {
		return fmt.Errorf("run build: %w", err)
	}
	defer lease.Close()
	spec, err := prepare(lease.Base())
	if err != nil {
		return err
	}
	if spec.Build == nil {
		return errors.New("run build: the spec is no build")
	}
	lim, _ := d.limits("")
	spec.ID, spec.HostIDBase = id, lease.Base()
	spec.MaxProcs = int(max(1, lim.Pids-lim.Pids/8))
	var cg jail.Cgroup
	if d.cgroups != nil {
		if cg, err = d.cgroups.Create(d.cgroupName(id), lim); err != nil {
			return fmt.Errorf("run build: %w", err)
		}
		defer func() {
			if rerr := cg.Remove(context.WithoutCancel(ctx)); rerr != nil {
				d.log.Error("remove build cgroup", "id", id, "err", rerr)
			}
		}()
	}
	cmd := &exec.Cmd{Path: d.sidecar, Args: []string{"boxkite-sidecar", "init"}, Stdout: out, Stderr: out}
	cmd.ExtraFiles = []*os.File{lease.File()} // held by the build's init too
	if err := jail.Start(cmd, spec, "", nil, cg.Add); err != nil {
		return fmt.Errorf("run build: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("run build: %w", err)
	}
	return nil
}
