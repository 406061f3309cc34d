package jail

import (
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShareCgroupNamespaceProbes: ShareCgroupNamespace is the jail init's
// only probe for reachable threads (issue 27: each all-thread call stops
// the world), so the runtime's refusal in a cgo binary must come back as
// ErrThreadsUnreachable, which runInit falls back on, and a reachable
// process makes exactly one all-thread call, the setns.
func TestShareCgroupNamespaceProbes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
		want  error
	}{
		{"reachable", 0, nil},
		{"cgo", unix.ENOTSUP, ErrThreadsUnreachable},
		{"refused", unix.EPERM, unix.EPERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var traps []uintptr
			call := func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
				traps = append(traps, trap)
				return 0, 0, tc.errno
			}
			err := shareCgroupNamespace(call)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("shareCgroupNamespace = %v, want %v", err, tc.want)
			}
			if len(traps) != 1 || traps[0] != unix.SYS_SETNS {
				t.Errorf("all-thread calls %v, want one setns (%d)", traps, unix.SYS_SETNS)
			}
		})
	}
}

// TestAllThreadsCallsRefused: an all-thread prctl or capset refused by the
// runtime (cgo) is ErrThreadsUnreachable, as LockdownProcess documents.
func TestAllThreadsCallsRefused(t *testing.T) {
	on := allThreads{func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
		return 0, 0, unix.ENOTSUP
	}}
	if err := on.prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0); !errors.Is(err, ErrThreadsUnreachable) {
		t.Errorf("prctl = %v, want ErrThreadsUnreachable", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := on.capset(&hdr, &data[0]); !errors.Is(err, ErrThreadsUnreachable) {
		t.Errorf("capset = %v, want ErrThreadsUnreachable", err)
	}
}
