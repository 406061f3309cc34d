//go:build linux

package images

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/google/go-cmp/cmp"
)

// TestMaskLayer: a mask whites out exactly what others may not read
// (files without o+r, directories without o+rx), below directories with
// the host's modes and owners, and nothing under a masked directory.
func TestMaskLayer(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("needs root (mknod of whiteouts, chown)")
		}
		t.Skip("needs root")
	}
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "mask")
	files := []struct {
		path string
		mode os.FileMode
		dir  bool
	}{
		{"passwd", 0o644, false},
		{"shadow", 0o640, false},
		{"ssh", 0o755, true},
		{"ssh/ssh_config", 0o644, false},
		{"ssh/ssh_host_ed25519_key", 0o600, false},
		{"ssh/ssh_host_ed25519_key.pub", 0o644, false},
		{"ssl", 0o755, true},
		{"ssl/private", 0o700, true},
		{"ssl/private/key.pem", 0o600, false},
		{"sudoers", 0o440, false},
		{"link", 0, false},
	}
	for _, f := range files {
		p := filepath.Join(src, f.path)
		var err error
		switch {
		case f.path == "link":
			err = os.Symlink("shadow", p)
		case f.dir:
			err = os.Mkdir(p, 0o755)
		default:
			err = os.WriteFile(p, []byte("x"), 0o644)
		}
		if err == nil && f.path != "link" {
			err = os.Chmod(p, f.mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(src, "ssh"), 0, 101); err != nil {
		t.Fatal(err)
	}
	if err := maskLayer(src, dst); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		st := fi.Sys().(*syscall.Stat_t)
		switch {
		case fi.Mode()&os.ModeCharDevice != 0 && st.Rdev == 0:
			got = append(got, rel+" whiteout")
		case fi.IsDir():
			got = append(got, rel+" dir "+fi.Mode().Perm().String()+" gid "+strconv.Itoa(int(st.Gid)))
		default:
			got = append(got, rel+" other")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srcMode, _ := os.Stat(src)
	want := []string{
		". dir " + srcMode.Mode().Perm().String() + " gid 0",
		"shadow whiteout",
		"ssh dir -rwxr-xr-x gid 101", // the host's owner and mode
		"ssh/ssh_host_ed25519_key whiteout",
		"ssl dir -rwxr-xr-x gid 0",
		"ssl/private whiteout", // closed itself: nothing below it is looked at
		"sudoers whiteout",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mask (-want +got):\n%s", diff)
	}
}

// BenchmarkAssembleRoot: making a build's root (a mapping namespace,
// idmapped clones of the host's system directories and of the image's,
// the masks of /etc and the package state, the overlays), each on a
// fresh thread in a mount namespace of its own, as a build does.
func BenchmarkAssembleRoot(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	m := &Manager{dir: b.TempDir()}
	i := 0
	for b.Loop() {
		id := "img_bench" + strconv.Itoa(i)
		i++
		if err := os.Mkdir(m.path(id, ""), 0o700); err != nil {
			b.Fatal(err)
		}
		errc := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread takes its mounts along
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				errc <- err
				return
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				errc <- err
				return
			}
			_, err := m.assembleRoot(id, 0x70000000)
			errc <- err
		}()
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
