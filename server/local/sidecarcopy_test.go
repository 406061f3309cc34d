//go:build linux

package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/hugecopy"
)

// needHugeCopies skips unless copySidecar can work here: root, and tmpfs
// huge pages in the kernel.
func needHugeCopies(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting the copies' tmpfs needs root")
	}
	if err := hugecopy.Supported(); err != nil {
		t.Skip(err)
	}
}

// copiesDir is a copies directory of the test's own, unmounted at its end.
func copiesDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "copies")
	t.Cleanup(func() {
		for unix.Unmount(dir, unix.MNT_DETACH) == nil {
		}
	})
	return dir
}

func sidecarSum(t *testing.T) (string, []byte) {
	t.Helper()
	bin, err := os.ReadFile(sidecarBin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	return hex.EncodeToString(sum[:]), bin
}

// TestDriverRunsSidecarCopy: a root driver's spawner and jails execute the
// copy on the huge-page tmpfs, not the binary they were given.
func TestDriverRunsSidecarCopy(t *testing.T) {
	needHugeCopies(t)
	t.Parallel()
	dir := copiesDir(t)
	name, _ := sidecarSum(t)
	var log bytes.Buffer
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, SidecarCopies: dir, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the driver's log:\n%s", log.String())
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	want := filepath.Join(dir, name)
	if err := d.spawner.Prepare(); err != nil {
		t.Fatal(err)
	}
	assertExecutes(t, "the spawner", d.spawner.PID(), want)
	id := "0a1b2c3d-0000-4000-8000-0000000c0b1e"
	ep := create(t, d, id)
	if res := run(t, ep, "true"); res.ExitCode != 0 {
		t.Fatalf("exec in the jail: %+v", res)
	}
	st, err := readState(d.sandboxDir(id))
	if err != nil {
		t.Fatal(err)
	}
	assertExecutes(t, "the jail", st.PID, want)
}

// assertExecutes fails unless pid's executable is the file at path (the
// same inode: a jail's exe link names it from a mount tree it has left).
func assertExecutes(t *testing.T, who string, pid int, path string) {
	t.Helper()
	var exe, want unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/exe", &exe); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(path, &want); err != nil {
		t.Fatal(err)
	}
	if exe.Dev != want.Dev || exe.Ino != want.Ino {
		link, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		t.Errorf("%s (pid %d) executes %s, want %s", who, pid, link, path)
	}
}

// TestSidecarCopyFallback: without root, turned off, or with a copies
// directory that cannot be made, the driver runs the binary where it is,
// and says why when it tried.
func TestSidecarCopyFallback(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		root   bool
		copies string
		logged bool
	}{
		{"not root", false, "", false},
		{"off", true, SidecarCopiesOff, false},
		{"directory under a file", true, filepath.Join(file, "copies"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			d := &Driver{sidecar: sidecarBin, root: tt.root, cfg: Config{SidecarCopies: tt.copies}, log: slog.New(slog.NewTextHandler(&log, nil))}
			d.useSidecarCopy()
			if d.sidecar != sidecarBin || d.copy != nil {
				t.Errorf("runs %s (copy %v), want %s", d.sidecar, d.copy, sidecarBin)
			}
			if got := strings.Contains(log.String(), "not a huge-page copy"); got != tt.logged {
				t.Errorf("logged %v, want %v: %q", got, tt.logged, log.String())
			}
		})
	}
}
