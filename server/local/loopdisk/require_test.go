//go:build linux

package loopdisk

import (
	"os"
	"testing"
)

// requireLoop skips a test that needs loop-mounted disks where they cannot
// work (not root, no /dev/loop-control, no mkfs.ext4), and fails it in CI,
// which runs as root with e2fsprogs: no test skips there.
func requireLoop(t testing.TB) {
	t.Helper()
	if why := LoopAvailable(os.Geteuid() == 0); why != "" {
		skipOutsideCI(t, why)
	}
}

// requireClonePool is requireLoop and mkfs.xfs (CI installs xfsprogs).
func requireClonePool(t testing.TB) {
	t.Helper()
	requireLoop(t)
	if MkfsXFSPath() == "" {
		skipOutsideCI(t, "mkfs.xfs not found (install xfsprogs)")
	}
}

func skipOutsideCI(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: CI runs this test as root with e2fsprogs and xfsprogs", why)
	}
	t.Skip(why)
}
