//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/loopdisk"
)

// A delete answers once the sandbox's jail is dead and its cgroups are
// gone. The rest of its removal — unmounting its disk, discarding the
// image, removing its files — runs after the answer: with the jail gone
// the host's mount is the disk's last reference, so the unmount is the
// whole ext4 shutdown (four device flushes, the superblock, the journal
// and its threads) plus an expedited RCU grace period, ~9 sleeps a delete
// on the request path (issue 27, session 29). Nothing of the disk needs
// keeping: the server's final storage sync ran before the delete, and
// what a deleted sandbox wrote is to be thrown away, not flushed.
//
// So that nothing of it meets a create that follows at once, the
// sandbox's directory is first renamed aside, to removing/<random> in the
// same data root (its disk's mount moves with it): its path, its id and
// its cgroups' names are free when Delete returns (the cgroups are
// removed before), its host id range is free once its jail is dead and
// nothing in another jail can reach the disk (the directory is root's,
// 0700), and its loop device stays attached to its own image until the
// unmount, where a new disk gets another one. A removal whose process
// died before it finished (a crash, a SIGKILL) is finished by the next
// driver on the same state directory (New) or by Cleanup (`boxkite
// down`); Shutdown waits for those under way.

// removingDir holds, in each data root, the directories of sandboxes and
// warm pool members whose removal runs after their delete answered.
const removingDir = "removing"

// removals counts the removals that run after their answer, so Shutdown,
// Cleanup and Release can wait for them. The zero value is ready.
type removals struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n fell to 0; nil before the first
	// hold, when set (tests), is waited for by each removal before it
	// claims its directory: a process that died after the answer.
	hold chan struct{}
}

// begin counts one removal and returns the hold it waits for, if any.
func (r *removals) begin() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.idle = make(chan struct{})
	}
	r.n++
	return r.hold
}

func (r *removals) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n--; r.n == 0 {
		close(r.idle)
	}
}

// wait returns once no removal runs, or with ctx's error.
func (r *removals) wait(ctx context.Context) error {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for sandbox removals: %w", ctx.Err())
	}
}

// removeFiles removes what is left of a sandbox or pool member in dir
// once its jail is dead and its cgroups are gone: its disk, its image and
// its files, after the caller's answer when dir can be renamed aside,
// else at once.
func (d *Driver) removeFiles(dir string) error {
	aside, err := setAside(dir)
	switch {
	case err != nil:
		// A full host can refuse even a rename's directory entry:
		// removed in place, as before the removals ran after the answer.
		d.log.Warn("remove a sandbox's files in place", "dir", dir, "err", err)
		return finishRemoval(d.images, dir)
	case aside == "":
		return nil // no directory: nothing was made, or all is removed
	}
	d.removeLater(aside)
	return nil
}

// setAside renames dir, a directory of a data root's sandboxes/ or pool/,
// to a new name in that root's removing/, and returns it; "" when dir
// does not exist.
func setAside(dir string) (string, error) {
	parent := filepath.Join(filepath.Dir(filepath.Dir(dir)), removingDir)
	if err := os.Mkdir(parent, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("set sandbox files aside: %w", err)
	}
	name, err := newToken()
	if err != nil {
		return "", fmt.Errorf("set sandbox files aside: %w", err)
	}
	aside := filepath.Join(parent, name[:16])
	if err := os.Rename(dir, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("set sandbox files aside: %w", err)
	}
	return aside, nil
}

// removeLater finishes the removal set aside in dir in the background.
func (d *Driver) removeLater(dir string) {
	hold := d.removals.begin()
	go func() {
		defer d.removals.end()
		if hold != nil {
			<-hold
		}
		release, ok := claimRemoval(dir)
		if !ok {
			return // another driver's, or finished
		}
		defer release()
		if err := finishRemoval(d.images, dir); err != nil {
			d.log.Warn("finish a sandbox's removal after its answer; the next start of the server retries", "dir", dir, "err", err)
		}
	}()
}

// claimRemoval takes the lock of the removal set aside in dir (flock on
// the directory), so that of two drivers on one state directory, the one
// that set it aside and a new one sweeping (finishRemovals), one finishes
// it. false when another holds it or dir is gone.
func claimRemoval(dir string) (release func(), ok bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return nil, false
	}
	return func() { unix.Close(fd) }, true
}

// finishRemoval unmounts the disk in dir (whatever its state file says:
// a crash may have come between the mount and the state file), discards
// its image through images (nil: none) and removes dir.
func finishRemoval(images *loopdisk.Images, dir string) error {
	mnt := filepath.Join(dir, diskMount)
	loop := loopdisk.LoopDevice(mnt)
	if err := loopdisk.Unmount(mnt); err != nil {
		return err
	}
	if images != nil {
		if err := images.Discard(filepath.Join(dir, diskImage), loop); err != nil {
			return err
		}
	}
	return removeAll(dir)
}

// finishRemovals finishes, in the background, the removals a driver before
// this one set aside in either data root and did not finish.
func (d *Driver) finishRemovals() {
	roots := []string{d.data}
	if root := d.otherRoot(); root != "" {
		roots = append(roots, root)
	}
	for _, root := range roots {
		entries, _ := os.ReadDir(filepath.Join(root, removingDir))
		for _, e := range entries {
			d.removeLater(filepath.Join(root, removingDir, e.Name()))
		}
	}
}
