package jail

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNewNetNS: NewNetNS makes a network namespace other than ours,
// owned by our user namespace, with lo up; inNetNS runs its function in
// it; and afterwards no thread of this process is left in it. A
// descriptor that is not a network namespace fails before the function
// runs.
func TestNewNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace needs root")
	}
	own, ownUser := inodeOf(t, "/proc/self/ns/net"), inodeOf(t, "/proc/self/ns/user")
	ns, err := NewNetNS()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	made := st.Ino
	if made == own {
		t.Fatal("NewNetNS returned our own network namespace")
	}
	if owner := ownerOf(t, ns); owner != ownUser {
		t.Errorf("the namespace's owner is user namespace %d, want ours %d", owner, ownUser)
	}
	allThreadsIn(t, own)

	var inside uint64
	var flags uint16
	err = inNetNS(int(ns.Fd()), func() error {
		inside = inodeOf(t, "/proc/thread-self/ns/net")
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("lo")
		if err == nil {
			err = unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr)
		}
		flags = ifr.Uint16()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if inside != made || flags&unix.IFF_UP == 0 {
		t.Errorf("inside: namespace %d (want %d), lo flags %#x (want up)", inside, made, flags)
	}
	allThreadsIn(t, own)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ran := false
	if err := inNetNS(int(r.Fd()), func() error { ran = true; return nil }); err == nil || ran {
		t.Errorf("inNetNS of a pipe: %v, ran %v; want an error before the function", err, ran)
	}
	allThreadsIn(t, own)
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func ownerOf(t *testing.T, ns *os.File) uint64 {
	t.Helper()
	fd, err := unix.IoctlRetInt(int(ns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// allThreadsIn fails unless every thread of this process is in the
// network namespace want.
func allThreadsIn(t *testing.T, want uint64) {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tasks {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil && st.Ino != want {
			t.Errorf("thread %s is in network namespace %d, not ours %d", filepath.Base(filepath.Dir(filepath.Dir(p))), st.Ino, want)
		}
	}
}
