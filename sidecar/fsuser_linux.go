package sidecar

import (
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// File work runs with the sandbox user's filesystem ids, so a file route
// reaches only what an agent command could: the sidecar is the jail's root
// and would otherwise read, replace and create anything in the roots, and a
// bug in path handling would reach anything in the jail.
//
// Per-thread credentials rather than a worker process running as uid 1001:
// the routes keep streaming between the request and a descriptor in one
// process with no extra copy or protocol, and the switch costs a few system
// calls. Linux keeps credentials per thread; setfsuid, setfsgid and the raw
// setgroups system call change only the calling thread (x/sys/unix issues
// them directly, not through the runtime's all-threads broadcast that
// syscall.Setgroups uses). The goroutine is locked to its thread for the
// switch and unlocked only after the sidecar's ids are back, so no other
// goroutine ever runs with them; a thread whose ids cannot be restored
// stays locked, and the runtime ends it with its goroutine.
//
// Moving the fsuid away from 0 also clears CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN and CAP_FSETID from the
// thread's effective set (capabilities(7)); moving it back to 0 restores
// them from the permitted set. With them gone the kernel checks every
// open, create, rename and chmod exactly as for the sandbox user.

// fsUser is who file work runs as. The zero value is the sidecar itself.
type fsUser struct {
	uid, gid int
	on       bool  // switch ids; false when the sidecar already is the user, or cannot switch
	selfGID  int   // the sidecar's fsgid, restored after the switch (its fsuid is 0)
	groups   []int // the sidecar's supplementary groups, likewise
}

// newFSUser returns the sandbox user when the sidecar runs as root (in its
// user namespace) and commands run as another uid directly. When the
// sidecar is not root (a kube pod runs it as the sandbox user; an
// unprivileged host nests commands in a user namespace that maps back to
// the sidecar's own id) the sidecar's rights already are the agent's, and
// there is nothing to switch.
func newFSUser(ra *RunAs) (fsUser, error) {
	if ra == nil || ra.NestedUserNS || unix.Geteuid() != 0 || ra.UID == 0 {
		return fsUser{}, nil
	}
	groups, err := unix.Getgroups()
	if err != nil {
		return fsUser{}, fmt.Errorf("read supplementary groups: %w", err)
	}
	return fsUser{uid: ra.UID, gid: ra.GID, on: true, selfGID: unix.Getegid(), groups: groups}, nil
}

// do runs fn with the user's filesystem ids on a locked thread. fn must do
// its file system calls on the calling goroutine and must not block on the
// network: the thread is held for its duration.
func (u fsUser) do(fn func() error) (err error) {
	if !u.on {
		return fn()
	}
	runtime.LockOSThread()
	if err := u.enter(); err != nil {
		if u.leave() == nil {
			runtime.UnlockOSThread()
		}
		return err
	}
	defer func() {
		if lerr := u.leave(); lerr != nil {
			err = lerr // the thread stays locked and dies with its goroutine
			return
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// enter switches the calling thread to the user: no supplementary groups
// (commands get none either), then the fsgid and the fsuid, each checked,
// since setfsuid and setfsgid report no errors.
func (u fsUser) enter() error {
	if len(u.groups) > 0 {
		if err := unix.Setgroups(nil); err != nil {
			return fmt.Errorf("drop supplementary groups: %w", err)
		}
	}
	if err := setfs(unix.SetfsgidRetGid, u.gid); err != nil {
		return fmt.Errorf("switch fsgid to %d: %w", u.gid, err)
	}
	if err := setfs(unix.SetfsuidRetUid, u.uid); err != nil {
		return fmt.Errorf("switch fsuid to %d: %w", u.uid, err)
	}
	return nil
}

// leave gives the calling thread the sidecar's ids back.
func (u fsUser) leave() error {
	if err := setfs(unix.SetfsuidRetUid, 0); err != nil {
		return fmt.Errorf("restore fsuid: %w", err)
	}
	if err := setfs(unix.SetfsgidRetGid, u.selfGID); err != nil {
		return fmt.Errorf("restore fsgid: %w", err)
	}
	if len(u.groups) > 0 {
		if err := unix.Setgroups(u.groups); err != nil {
			return fmt.Errorf("restore supplementary groups: %w", err)
		}
		if now, err := unix.Getgroups(); err != nil || !slices.Equal(now, u.groups) {
			return fmt.Errorf("restore supplementary groups: have %v, want %v", now, u.groups)
		}
	}
	return nil
}

// setfs sets an fsuid or fsgid and checks it took: the call returns the
// previous value whether or not it succeeded, and -1, which is no valid
// id, changes nothing and returns the current one.
func setfs(call func(int) (int, error), id int) error {
	if _, err := call(id); err != nil {
		return err
	}
	cur, err := call(-1)
	if err != nil {
		return err
	}
	if cur != id {
		return fmt.Errorf("still %d", cur)
	}
	return nil
}
