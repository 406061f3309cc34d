package jail

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// NewNetNS makes a network namespace with its loopback up, owned by the
// caller's user namespace, and returns it as an open file for a jail's
// Spec.NetNS. A new network namespace was the largest part of a jail's
// clone (0.3-0.45 ms of the spawner's ~1 ms CPU per create, issue 27);
// made here, by a prepared pool's filler, it leaves the create's path.
//
// The namespace is not the jail's to configure: its owner is the caller's
// user namespace, so the jail's root has no CAP_NET_ADMIN over it (no
// link, address, route or sysctl change) and cannot bring lo down. It
// needs root (CAP_SYS_ADMIN).
func NewNetNS() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	// A thread of its own, locked: it leaves the new namespace before it
	// is unlocked, or ends with the goroutine if it cannot.
	go func() {
		runtime.LockOSThread()
		back, f, err := makeNetNS()
		if back {
			runtime.UnlockOSThread()
		}
		ch <- result{f, err}
	}()
	r := <-ch
	return r.f, r.err
}

// makeNetNS runs on a locked thread: back reports whether the thread is
// in its own network namespace again.
func makeNetNS() (back bool, ns *os.File, err error) {
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return true, nil, fmt.Errorf("make network namespace: %w", err)
	}
	defer own.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return true, nil, fmt.Errorf("make network namespace: %w", err)
	}
	ns, err = os.Open("/proc/thread-self/ns/net")
	if err == nil {
		err = loopbackUp()
	}
	if rerr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); rerr != nil {
		err = errors.Join(err, fmt.Errorf("leave network namespace: %w", rerr))
	} else {
		back = true
	}
	if err != nil {
		if ns != nil {
			_ = ns.Close()
		}
		return back, nil, fmt.Errorf("make network namespace: %w", err)
	}
	return back, ns, nil
}

// inNetNS runs clone on a locked thread that has entered the network
// namespace ns (a descriptor of one, from NewNetNS), so that a jail
// cloned there without CLONE_NEWNET lives in it. The thread enters it
// while it is still the caller's root (setns needs CAP_SYS_ADMIN over
// the namespace's owner), before asOwner changes its ids, and goes back
// afterwards; a thread that cannot go back (never seen) ends with its
// goroutine, which leaves the jail cloned, and clone's outcome, as they are.
func inNetNS(ns int, clone func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := enterNetNS(ns, clone)
		if back {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// enterNetNS is inNetNS's locked thread: back reports whether it is in
// its own network namespace again.
func enterNetNS(ns int, clone func() error) (back bool, err error) {
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return true, fmt.Errorf("enter the jail's network namespace: %w", err)
	}
	defer own.Close()
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		return true, fmt.Errorf("enter the jail's network namespace: %w", err)
	}
	err = clone()
	return unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil, err
}
