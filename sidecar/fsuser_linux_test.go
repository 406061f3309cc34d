package sidecar

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// threadIDs returns the Uid: and Gid: lines (real, effective, saved,
// filesystem) and Groups: of the calling thread.
func threadIDs(t testing.TB) (uid, gid, groups string) {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "Uid":
			uid = strings.Join(strings.Fields(v), " ")
		case "Gid":
			gid = strings.Join(strings.Fields(v), " ")
		case "Groups":
			groups = strings.Join(strings.Fields(v), " ")
		}
	}
	return uid, gid, groups
}

// TestFSUserSwitch: inside do, the thread's filesystem ids are the
// sandbox user's and it has no supplementary groups; the real, effective
// and saved ids stay the sidecar's; afterwards everything is back.
func TestFSUserSwitch(t *testing.T) {
	needRoot(t, "switching filesystem ids")
	u, err := newFSUser(&RunAs{UID: 1001, GID: 1002})
	if err != nil || !u.on {
		t.Fatalf("newFSUser = %+v, %v; want a switch", u, err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	uid0, gid0, groups0 := threadIDs(t)
	var uid, gid, groups string
	if err := u.do(func() error { uid, gid, groups = threadIDs(t); return nil }); err != nil {
		t.Fatal(err)
	}
	if uid != "0 0 0 1001" || !strings.HasSuffix(gid, " 1002") || groups != "" {
		t.Errorf("inside do: Uid %q Gid %q Groups %q; want fsuid 1001, fsgid 1002, no groups", uid, gid, groups)
	}
	if u2, g2, gr2 := threadIDs(t); u2 != uid0 || g2 != gid0 || gr2 != groups0 {
		t.Errorf("after do: Uid %q Gid %q Groups %q; want %q %q %q", u2, g2, gr2, uid0, gid0, groups0)
	}
	for _, ra := range []*RunAs{nil, {UID: 1001, GID: 1001, NestedUserNS: true}, {UID: 0, GID: 0}} {
		if u, err := newFSUser(ra); err != nil || u.on {
			t.Errorf("newFSUser(%+v) = %+v, %v; want no switch", ra, u, err)
		}
	}
}

// BenchmarkFSUserSwitch is the cost of one phase of file work as the
// sandbox user: lock the thread, switch the ids, switch them back.
func BenchmarkFSUserSwitch(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("switching filesystem ids needs root")
	}
	u, err := newFSUser(&RunAs{UID: 1001, GID: 1002})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := u.do(func() error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
