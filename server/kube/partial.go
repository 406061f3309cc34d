package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/model"
)

// A copy under way (a snapshot's, an import's) is a partial-* file of the
// snapshot directory, which the replicas share: its copy holds an
// exclusive flock on it from its creation until it is renamed into place
// or removed, and the kernel (on a network volume, the file server) lets
// the lock go when the copy's process dies. A partial file no copy holds
// is one a dead replica's copy left (model.PartialSnapshotLister), which
// the control plane's sweep deletes.

// partialPrefix starts the name of a copy under way.
const partialPrefix = "partial-"

var _ model.PartialSnapshotLister = (*Driver)(nil)

// partial is a copy under way, held (locked) until done.
type partial struct {
	*os.File
	renamed bool
}

// createPartial creates a copy's file in dir, held. A volume whose files
// take no lock (ENOLCK, EOPNOTSUPP) holds none: the sweep, which cannot
// lock them either, deletes none of its partial files.
func createPartial(dir string) (*partial, error) {
	f, err := os.CreateTemp(dir, partialPrefix+"*")
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil && !lockUnsupported(err) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return &partial{File: f}, nil
}

// rename moves the finished copy to path; it stays held until release.
func (p *partial) rename(path string) error {
	if err := os.Rename(p.Name(), path); err != nil {
		return err
	}
	p.renamed = true
	return nil
}

// release removes the copy unless it was renamed, then lets it go: its
// name is gone before its lock, so no sweep finds it unheld.
func (p *partial) release() {
	if !p.renamed {
		os.Remove(p.Name())
	}
	p.Close()
}

func lockUnsupported(err error) bool {
	return errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP)
}

// UnheldPartialSnapshots implements model.PartialSnapshotLister: the
// partial-* files of the snapshot directory no copy holds.
func (d *Driver) UnheldPartialSnapshots(context.Context) ([]string, error) {
	entries, err := d.snapshotEntries()
	if err != nil {
		return nil, err
	}
	var unheld []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), partialPrefix) || !e.Type().IsRegular() {
			continue
		}
		err := d.withUnheldPartial(e.Name(), func(string) error { return nil })
		switch {
		case err == nil:
			unheld = append(unheld, e.Name())
		case errors.Is(err, errPartialHeld), errors.Is(err, os.ErrNotExist):
		default:
			return nil, fmt.Errorf("list partial snapshots: %w", err)
		}
	}
	return unheld, nil
}

// DeletePartialSnapshot implements model.PartialSnapshotLister: it
// removes the partial file name while it holds its lock, so never one a
// copy holds.
func (d *Driver) DeletePartialSnapshot(_ context.Context, name string) error {
	if d.cfg.SnapshotDir == "" || !strings.HasPrefix(name, partialPrefix) || filepath.Base(name) != name {
		return fmt.Errorf("delete partial snapshot: %q is not one of the kube driver's", name)
	}
	err := d.withUnheldPartial(name, os.Remove)
	if err != nil && !errors.Is(err, errPartialHeld) && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete partial snapshot %s: %w", name, err)
	}
	return nil
}

// errPartialHeld is a partial file a copy holds, or one that cannot be
// told (its volume takes no lock).
var errPartialHeld = errors.New("held by a copy under way")

// withUnheldPartial calls fn with the path of the partial file name while
// it holds its lock: errPartialHeld if a copy does.
func (d *Driver) withUnheldPartial(name string, fn func(path string) error) error {
	path := filepath.Join(d.cfg.SnapshotDir, name)
	// Open for writing: on NFS, flock is a POSIX lock, whose exclusive
	// kind needs it.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) || lockUnsupported(err) {
			return errPartialHeld
		}
		return err
	}
	return fn(path)
}
