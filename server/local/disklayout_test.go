//go:build linux

package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// TestNewDiskDirs: a new sandbox's workspace and outputs are directories
// of mode 0755 owned by the sandbox user's canonical id on the host, and
// the sandbox user's own inside the jail, whether its disk came from a
// template holding them (the layout, issue 27 session 14) or from one
// without them, as a template of an older version or one mkfs.ext4 could
// not populate is: then prepare makes them.
func TestNewDiskDirs(t *testing.T) {
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	if d.storage != StorageLoop {
		t.Fatalf("storage %v, want loop disks (tests run as root)", d.storage)
	}
	check := func(t *testing.T, id string) {
		t.Helper()
		ep := create(t, d, id)
		for _, name := range []string{"workspace", "outputs"} {
			fi, err := os.Stat(filepath.Join(d.sandboxDir(id), diskMount, name))
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if !fi.IsDir() || fi.Mode().Perm() != 0o755 || st.Uid != jail.DefaultUID || st.Gid != jail.DefaultUID {
				t.Errorf("host side of %s: mode %v, owner %d:%d; want a 0755 directory of %d:%d", name, fi.Mode(), st.Uid, st.Gid, jail.DefaultUID, jail.DefaultUID)
			}
		}
		res := run(t, ep, "stat -c '%u:%g %a' /workspace "+jail.OutputsDir+" && touch /workspace/x "+jail.OutputsDir+"/y")
		if want := "1001:1001 755\n1001:1001 755\n"; res.ExitCode != 0 || res.Stdout != want {
			t.Errorf("in the jail: %+v, want %q", res, want)
		}
	}
	t.Run("template with the layout", func(t *testing.T) { check(t, "laid") })

	// Every template of the sandbox disks' layout is replaced by an empty
	// filesystem of its size: what an older version's template holds.
	laid, _ := filepath.Glob(filepath.Join(d.data, "images", "ext4j-*-workspace+outputs.*.img"))
	if len(laid) == 0 {
		t.Fatal("no template with the layout in images/")
	}
	for _, tmpl := range laid {
		empty := tmpl + ".empty"
		size, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(tmpl), "ext4j-"), "-")
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.images.Create(empty, n); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(empty, tmpl); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("template without the directories", func(t *testing.T) { check(t, "bare") })
}
