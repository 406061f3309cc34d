//go:build linux

package loopdisk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDiskImagesHaveJournal formats sandbox disk and volume images of a
// few sizes and checks that each keeps an ext4 journal, so a write the
// host cannot store leaves a consistent, read-only filesystem behind.
func TestDiskImagesHaveJournal(t *testing.T) {
	if MkfsPath() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("mkfs.ext4 not found: CI installs e2fsprogs")
		}
		t.Skip("mkfs.ext4 not found (install e2fsprogs)")
	}
	dumpe2fs, err := exec.LookPath("dumpe2fs")
	if err != nil {
		dumpe2fs = "/usr/sbin/dumpe2fs"
	}
	im := NewImages(t.TempDir(), nil)
	tests := []struct {
		name        string
		size        int64
		wantJournal string // "Total journal size" line
	}{
		{"minimum quota", 16 << 20, "4096k"}, // 1,024 blocks, the least mkfs.ext4 makes, of 4 KiB (templateBlockSize)
		{"a volume", 1 << 30, "16M"},
		{"the default quota", 5 << 30, "16M"}, // server/local.DefaultStorageGB
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "disk.img")
			if err := im.Create(img, tt.size); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(dumpe2fs, "-h", img).CombinedOutput()
			if err != nil {
				t.Fatalf("dumpe2fs: %v\n%s", err, out)
			}
			var features, journal string
			for _, line := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(line, "Filesystem features:"); ok {
					features = v
				}
				if v, ok := strings.CutPrefix(line, "Total journal size:"); ok {
					journal = strings.TrimSpace(v)
				}
			}
			if !strings.Contains(features, "has_journal") {
				t.Errorf("features %q lack has_journal", features)
			}
			if journal != tt.wantJournal {
				t.Errorf("journal size %q, want %q", journal, tt.wantJournal)
			}
		})
	}
}

// TestLoopReleased checks the wait for a discarded image's loop device
// on a fake sysfs: with the device known only that device's backing file
// counts (another device naming the same path is not read); unknown, every
// loop device's is read.
func TestLoopReleased(t *testing.T) {
	const image = "/state/images/.trash-1"
	tests := []struct {
		name string
		loop uint64
		want bool
	}{
		{"own device backs another file", unix.Mkdev(7, 5), true},
		{"own device still backs the image", unix.Mkdev(7, 4), false},
		{"own device detached", unix.Mkdev(7, 9), true},
		{"device unknown: a scan finds the image held", 0, false},
	}
	sys := t.TempDir()
	writeBacking := func(dir, backing string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(sys, dir, "loop"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sys, dir, "loop", "backing_file"), []byte(backing+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeBacking("block/loop3", image) // what a scan finds
	writeBacking("dev/block/7:4", image)
	writeBacking("dev/block/7:5", "/elsewhere/disk.img")
	im := &Images{sys: sys}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := im.loopReleased(image, tt.loop, 30*time.Millisecond); got != tt.want {
				t.Errorf("loopReleased(loop %d:%d) = %v, want %v", unix.Major(tt.loop), unix.Minor(tt.loop), got, tt.want)
			}
		})
	}
}

// TestLoopDeviceOfMountedImage mounts an image and checks that LoopDevice
// names the loop device sysfs says is backed by it, and that the wait on
// that device ends once the disk is unmounted (autoclear).
func TestLoopDeviceOfMountedImage(t *testing.T) {
	requireLoop(t)
	dir := t.TempDir()
	im := NewImages(filepath.Join(dir, "images"), nil)
	img, mnt := filepath.Join(dir, "disk.img"), filepath.Join(dir, "disk")
	if err := im.Create(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	if err := MountNew(img, mnt); err != nil {
		t.Fatal(err)
	}
	loop := LoopDevice(mnt)
	if loop == 0 {
		_ = Unmount(mnt)
		t.Fatal("LoopDevice of a mounted disk is 0")
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/loop/backing_file", unix.Major(loop), unix.Minor(loop)))
	if err != nil || strings.TrimSpace(string(b)) != img {
		t.Errorf("backing file of loop %d:%d = %q, %v; want %q", unix.Major(loop), unix.Minor(loop), b, err, img)
	}
	if got := LoopDevice(dir); got != 0 {
		t.Errorf("LoopDevice of a plain directory = %d, want 0", got)
	}
	if err := Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	if !im.loopReleased(img, loop, releaseBudget) {
		t.Errorf("loop %d:%d still backed by %s after the unmount", unix.Major(loop), unix.Minor(loop), img)
	}
}
