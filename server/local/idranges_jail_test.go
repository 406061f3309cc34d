//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// TestSandboxIDRanges: each sandbox maps a host id range of its own from
// the layout, leased exactly as long as its jail lives (the lease outlives
// the Create that took it, and a Delete frees it), and its user namespace
// limits are set. internal/securitytest checks the ids its processes run
// as and the namespace's owner.
func TestSandboxIDRanges(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	eps := map[string]model.Endpoint{"ra": create(t, d, "ra"), "rb": create(t, d, "rb")}
	bases := map[int]string{}
	for id, ep := range eps {
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			t.Fatal(err)
		}
		b := st.HostIDBase
		if b < DefaultIDRangeFirst || b >= DefaultIDRangeFirst+DefaultIDRangeCount*jail.IDRange || b%jail.IDRange != 0 {
			t.Errorf("sandbox %s maps host ids from %d, not a range of the default layout", id, b)
		}
		if other, ok := bases[b]; ok {
			t.Errorf("sandboxes %s and %s share the host id range at %d", id, other, b)
		}
		bases[b] = id
		if !heldBy(t, DefaultIDRangeDir, b) {
			t.Errorf("the lease on %s's range %d is free while its jail runs", id, b)
		}
		instances, _ := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
		watches, _ := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
		want := fmt.Sprintf("%d\n%d\n0\n", sevenEighths(t, instances), sevenEighths(t, watches))
		cmd := "cat /proc/sys/user/max_inotify_instances /proc/sys/user/max_inotify_watches /proc/sys/user/max_user_namespaces"
		if got := run(t, ep, cmd); got.Stdout != want {
			t.Errorf("%s: namespace limits %+v, want %q", id, got, want)
		}
	}
	for b, id := range bases {
		if err := d.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if heldBy(t, DefaultIDRangeDir, b) {
			t.Errorf("the lease on %s's range %d is still held after Delete", id, b)
		}
	}
}

func sevenEighths(t *testing.T, b []byte) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("read host limit: %v", err)
	}
	return n - n/8
}

// TestVolumeLegacyIDs: a volume made before per-sandbox ranges, its files
// owned by the legacy shared range, is moved to canonical ids when first
// mounted, without following a link the sandbox planted, and the sandbox
// owns its files.
func TestVolumeLegacyIDs(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ctx := context.Background()
	if err := d.CreateVolume(ctx, "legacy", 32<<20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DeleteVolume(ctx, "legacy") })
	data := d.volumeDataDir("legacy")
	legacy := LegacyIDBase + jail.DefaultUID
	outside := filepath.Join(t.TempDir(), "host-file")
	mustDo(t, os.WriteFile(outside, []byte("host\n"), 0o644))
	mustDo(t, os.Chown(outside, legacy, legacy))
	mustDo(t, os.Mkdir(filepath.Join(data, "dir"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(data, "dir", "f"), []byte("old\n"), 0o644))
	mustDo(t, os.Symlink(outside, filepath.Join(data, "dir", "link")))
	mustDo(t, os.WriteFile(filepath.Join(data, "root-made"), nil, 0o644))
	for _, p := range []string{data, filepath.Join(data, "dir"), filepath.Join(data, "dir", "f"), filepath.Join(data, "dir", "link")} {
		mustDo(t, os.Lchown(p, legacy, legacy))
	}
	mustDo(t, os.Lchown(filepath.Join(data, "root-made"), LegacyIDBase, LegacyIDBase))
	mustDo(t, os.Remove(filepath.Join(d.volumeDir("legacy"), canonicalMark)))

	ep, err := d.Create(ctx, model.Spec{ID: "mig", Volumes: []model.VolumeMount{{ID: "legacy", Path: "/workspace/vol"}}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := "cd /workspace/vol && stat -c '%n %u:%g' . dir dir/f dir/link root-made && echo new >> dir/f && cat dir/f"
	want := ". 1001:1001\ndir 1001:1001\ndir/f 1001:1001\ndir/link 1001:1001\nroot-made 0:0\nold\nnew\n"
	if got := run(t, ep, cmd); got.Stdout != want {
		t.Errorf("the sandbox sees its moved volume as %+v, want stdout %q", got, want)
	}
	owners := map[string]uint32{filepath.Join(data, "dir", "f"): jail.DefaultUID, outside: uint32(legacy)}
	for p, uid := range owners {
		var st syscall.Stat_t
		mustDo(t, syscall.Lstat(p, &st))
		if st.Uid != uid || st.Gid != uid {
			t.Errorf("host owner of %s = %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, uid)
		}
	}
	if _, err := os.Stat(filepath.Join(d.volumeDir("legacy"), canonicalMark)); err != nil {
		t.Errorf("the moved volume is not marked canonical: %v", err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
