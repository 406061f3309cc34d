package jail

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeepMount(t *testing.T) {
	trees := []string{"/usr", "/etc", "/proc", "/dev"}
	paths := []string{"/tmp", "/run/boxkite-sidecar/abc", "/opt/box kite/bin/boxkite-sidecar"}
	tests := []struct {
		point string
		keep  bool
	}{
		{"/", true},
		{"/usr", true},
		{"/usr/local", true}, // below a tree
		{"/usrx", false},     // a sibling whose name starts the same
		{"/etc/resolv.conf", true},
		{"/proc/sys/fs/binfmt_misc", true},
		{"/dev/shm", true},
		{"/tmp", true}, // the stage
		{"/tmp/sandbox/mnt", false},
		{"/run", true}, // on the way to the binary
		{"/run/boxkite-sidecar", true},
		{"/run/netns/x", false},
		{"/run/boxkite-sidecar/abc/x", false},
		{"/opt/box kite", true},
		{"/var/lib/boxkite/sandboxes/a/mnt", false},
		{"/var/lib/boxkite/cow", false},
		{"/home", false},
	}
	for _, tt := range tests {
		if got := keepMount(tt.point, trees, paths); got != tt.keep {
			t.Errorf("keepMount(%q) = %v, want %v", tt.point, got, tt.keep)
		}
	}
}

func TestMountPoints(t *testing.T) {
	info := filepath.Join(t.TempDir(), "mountinfo")
	const text = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:5 / /proc rw,nosuid shared:2 - proc proc rw
40 22 0:40 / /opt/box\040kite rw - tmpfs none rw
41 40 0:41 / /opt/box\040kite/a/ rw - tmpfs none rw
short line
`
	if err := os.WriteFile(info, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := mountPoints(info)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/", "/proc", "/opt/box kite", "/opt/box kite/a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mountPoints (-want +got):\n%s", diff)
	}
}

func TestWithResolved(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	got := withResolved([]string{link, real, filepath.Join(dir, "missing")})
	want := []string{link, real, real, filepath.Join(dir, "missing")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withResolved (-want +got):\n%s", diff)
	}
}
