package images

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// buildCaps are the capabilities a build's commands keep: what dpkg, apt,
// pip and npm need to install files owned by root and other system users.
// Everything else leaves the bounding set, CAP_SYS_CHROOT and
// CAP_SYS_ADMIN above all, without which a root process cannot climb out
// of the build's chroot or undo its namespaces.
var buildCaps = []int{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER, unix.CAP_FSETID,
	unix.CAP_KILL, unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETFCAP,
}

// dropBuildCaps removes every capability but buildCaps from the calling
// thread's bounding set, so processes it starts never hold them. The
// thread must be locked and never unlocked: its capabilities are gone.
func dropBuildCaps() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if slices.Contains(buildCaps, c) {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return nil
}
