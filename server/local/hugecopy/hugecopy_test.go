//go:build linux

package hugecopy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// needHugeCopies skips unless Make can work here: root, and tmpfs huge
// pages in the kernel.
func needHugeCopies(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting the copies' tmpfs needs root")
	}
	if err := Supported(); err != nil {
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

// testBinary is a binary to copy: this test's own.
func testBinary(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func binarySum(t *testing.T, path string) (string, []byte) {
	t.Helper()
	bin, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	return hex.EncodeToString(sum[:]), bin
}

// TestEscapeMount: a path is compared with mountinfo's field as the
// kernel escapes it (show_mountinfo's mangle: space, tab, newline and
// backslash in octal).
func TestEscapeMount(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/run/boxkite-sidecar", "/run/boxkite-sidecar"},
		{"/tmp/a b", `/tmp/a\040b`},
		{"/tmp/a\tb\nc", `/tmp/a\011b\012c`},
		{`/tmp/a\b`, `/tmp/a\134b`},
	} {
		if got := escapeMount(tt.in); got != tt.want {
			t.Errorf("escapeMount(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestMake: the copy is byte-identical to the binary, on a tmpfs
// with huge=always mounted once; a copy that differs from the binary is
// replaced, never used; copies no driver holds and leftovers go, a held
// one stays.
func TestMake(t *testing.T) {
	needHugeCopies(t)
	t.Parallel()
	dir := copiesDir(t)
	src := testBinary(t)
	name, bin := binarySum(t, src)
	want := filepath.Join(dir, name)

	c, err := Make(dir, src)
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
	c2, err := Make(dir, src)
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
	c3, err := Make(dir, src)
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
		t.Errorf("%s is not the binary (%d bytes, want %d)", path, len(got), len(bin))
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
		if f := strings.Fields(line); len(f) > 4 && f[4] == escapeMount(dir) {
			n++
		}
	}
	return n
}

// TestMakeRefusesOtherMount: a directory something else is mounted
// on (here a tmpfs without huge pages) is neither used nor mounted over.
func TestMakeRefusesOtherMount(t *testing.T) {
	needHugeCopies(t)
	t.Parallel()
	dir := copiesDir(t)
	src := testBinary(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("other", dir, "tmpfs", 0, "huge=never"); err != nil {
		t.Fatal(err)
	}
	if c, err := Make(dir, src); err == nil {
		_ = c.Close()
		t.Fatalf("copied to %s over a tmpfs without huge pages", c.path)
	}
	if n := mountsOn(t, dir); n != 1 {
		t.Errorf("%d mounts on %s, want the one there before", n, dir)
	}
}
