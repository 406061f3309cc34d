//go:build linux

package local

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/local/loopdisk"
)

// TestJailsDoNotPinHostMounts: a jail starts with a copy of the host's
// mounts (its mount namespace is cloned from the server's) and drops
// them when it pivots into its own root. Anything its init keeps open
// through that copy from before the pivot (the ELF interpreter of a
// dynamically linked sidecar, the cgroup CPU limit file the Go runtime
// keeps open for its container-aware GOMAXPROCS) pins the whole detached
// copy, and with it every filesystem the host had mounted: other
// sandboxes' disks, volumes, whatever else. Such a filesystem then
// outlives its unmount, unseen (no mount table shows it), and so do its
// loop device and its image's blocks, until the jail ends. A filesystem
// unmounted on the host must go while the jail runs on. (The sidecar of
// this package's tests is built as releases are, statically; the driver
// warns about a dynamically linked one, see checkSidecarStatic.)
func TestJailsDoNotPinHostMounts(t *testing.T) {
	if os.Geteuid() != 0 || loopdisk.MkfsPath() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("loop devices need root and mkfs.ext4, as CI has")
		}
		t.Skip("loop devices need root and mkfs.ext4")
	}
	t.Parallel()
	dir := t.TempDir()
	im := loopdisk.NewImages(filepath.Join(dir, "images"), nil)
	img, mnt := filepath.Join(dir, "other.img"), filepath.Join(dir, "other")
	if err := im.Create(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	if err := loopdisk.Mount(img, mnt); err != nil {
		t.Fatal(err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			_ = loopdisk.Unmount(mnt)
		}
	})
	loops := loopsBackedUnder(dir)
	if len(loops) != 1 {
		t.Fatalf("loop devices %+v, want one", loops)
	}

	d := newDriver(t)
	ep := create(t, d, "0a1b2c3d-0000-4000-8000-00000000f1a5")
	if res := run(t, ep, "true"); res.ExitCode != 0 {
		t.Fatalf("exec in the jail: %+v", res)
	}
	if err := loopdisk.Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	mounted = false
	// The loop device detaches itself once its filesystem is gone.
	deadline := time.Now().Add(10 * time.Second)
	for len(loopsBackedUnder(dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("with a jail running, the filesystem unmounted on the host lives on: %+v still attached", loopsBackedUnder(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCheckSidecarStatic: the driver warns about a dynamically linked
// sidecar and says nothing about a static one.
func TestCheckSidecarStatic(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh") // dynamically linked on every Linux CI has
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, binary string
		warn         bool
	}{
		{"static, as this package's tests build it", sidecarBin, false},
		{"dynamic", sh, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logged bytes.Buffer
			d := &Driver{sidecar: tt.binary, log: slog.New(slog.NewTextHandler(&logged, nil))}
			d.checkSidecarStatic()
			if got := strings.Contains(logged.String(), "dynamically linked"); got != tt.warn {
				t.Errorf("warned %v, want %v: %q", got, tt.warn, logged.String())
			}
		})
	}
}
