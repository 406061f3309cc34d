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
)

// needHugeCopies skips unless copySidecar can work here: root, and tmpfs
// huge pages in the kernel.
func needHugeCopies(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting the copies' tmpfs needs root")
	}
	if err := shmemHugeAllowed(); err != nil {
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

// TestCopySidecar: the copy is byte-identical to the binary, on a tmpfs
// with huge=always mounted once; a copy that differs from the binary is
// replaced, never used; copies no driver holds and leftovers go, a held
// one stays.
func TestCopySidecar(t *testing.T) {
	needHugeCopies(t)
	t.Parallel()
	dir := copiesDir(t)
	name, bin := sidecarSum(t)
	want := filepath.Join(dir, name)

	c, err := copySidecar(dir, sidecarBin)
	if err != nil {
		t.Fatal(err)
	}
	if c.path != want {
		t.Errorf("copy at %s, want %s", c.path, want)
	}
	assertCopy(t, c.path, bin)
	if fstype, opts, _ := mountAt(dir); fstype != "tmpfs" || !hasOption(opts, "huge=always") {
		t.Errorf("mounted on %s: %q %q, want a tmpfs with huge=always", dir, fstype, opts)
	}

	// A second driver of the same binary shares the copy and the mount.
	c2, err := copySidecar(dir, sidecarBin)
	if err != nil {
		t.Fatal(err)
	}
	if c2.path != want {
		t.Errorf("second copy at %s, want %s", c2.path, want)
	}
	if n := mountsOn(t, dir); n != 1 {
		t.Errorf("%d mounts on %s, want 1", n, dir)
	}

	// Other binaries' copies: one held by a driver, one not, and an
	// interrupted copy.
	held, free := filepath.Join(dir, strings.Repeat("a", 64)), filepath.Join(dir, strings.Repeat("b", 64))
	for _, p := range []string{held, free, free + ".tmp"} {
		if err := os.WriteFile(p, []byte("other"), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	h, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := unix.Flock(int(h.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}

	// Our own copy, changed behind our back, once no driver holds it.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, append(bin[:len(bin)-1:len(bin)-1], bin[len(bin)-1]^1), 0o555); err != nil {
		t.Fatal(err)
	}
	c3, err := copySidecar(dir, sidecarBin)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	assertCopy(t, c3.path, bin)
	for p, stays := range map[string]bool{held: true, free: false, free + ".tmp": false} {
		if _, err := os.Stat(p); (err == nil) != stays {
			t.Errorf("%s: stat %v, want it kept %v", filepath.Base(p), err, stays)
		}
	}
}

func assertCopy(t *testing.T, path string, bin []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bin) {
		t.Errorf("%s is not the sidecar binary (%d bytes, want %d)", path, len(got), len(bin))
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o555 {
		t.Errorf("%s mode %v, want r-x for all (the jail's owner executes it)", path, st.Mode())
	}
}

func mountsOn(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 4 && unescapeMount(f[4]) == dir {
			n++
		}
	}
	return n
}

// TestCopySidecarRefusesOtherMount: a directory something else is mounted
// on (here a tmpfs without huge pages) is neither used nor mounted over.
func TestCopySidecarRefusesOtherMount(t *testing.T) {
	needHugeCopies(t)
	t.Parallel()
	dir := copiesDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("other", dir, "tmpfs", 0, "huge=never"); err != nil {
		t.Fatal(err)
	}
	if c, err := copySidecar(dir, sidecarBin); err == nil {
		_ = c.Close()
		t.Fatalf("copied to %s over a tmpfs without huge pages", c.path)
	}
	if n := mountsOn(t, dir); n != 1 {
		t.Errorf("%d mounts on %s, want the one there before", n, dir)
	}
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
