// Package cgosidecar is test support: it builds boxkite-sidecar with cgo,
// dynamically linked against the host's C library, for the tests of what
// such a sidecar does differently from the static one released (its jail
// runs two processes; it boots images with no libc through the host's
// loader).
package cgosidecar

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds boxkite-sidecar with CGO_ENABLED=1 into a directory the
// jail's unprivileged root can read, removed when t ends, and returns its
// path. It fails t if the build fails (cgo needs a C compiler) or if the
// binary it gets is static.
func Build(t testing.TB) string {
	t.Helper()
	// Not below t.TempDir(), whose parent only root may enter.
	dir, err := os.MkdirTemp("", "bxkcgo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "boxkite-sidecar")
	build := exec.Command("go", "build", "-o", bin, "github.com/boxkite/boxkite/cmd/boxkite-sidecar")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build a sidecar with cgo (it needs a C compiler): %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return bin
		}
	}
	t.Fatal("the sidecar built with CGO_ENABLED=1 is static: this test needs one dynamically linked")
	return ""
}
