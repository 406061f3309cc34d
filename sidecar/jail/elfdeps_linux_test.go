package jail

import (
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// elfDepsReference is what the sidecar read with debug/elf before ELFDeps.
func elfDepsReference(t *testing.T, path string) (string, []string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				t.Fatal(err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		return "", nil
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	return interp, libs
}

// TestELFDeps checks ELFDeps against debug/elf on the host's dynamically
// linked executables (one at least needing several libraries, their order
// kept), a shared library (no interpreter) and this test
// binary, and that a file that is not ELF, or is cut short, is an error.
func TestELFDeps(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{self}
	for _, p := range []string{"/bin/true", "/bin/sh", "/bin/ls", "/bin/mount", "/usr/bin/ssh", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"} {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			paths = append(paths, real)
		}
	}
	dynamic := 0
	for _, p := range paths {
		interp, libs, err := ELFDeps(p)
		if err != nil {
			t.Errorf("ELFDeps(%s): %v", p, err)
			continue
		}
		wantInterp, wantLibs := elfDepsReference(t, p)
		if interp != wantInterp || !cmp.Equal(libs, wantLibs) {
			t.Errorf("ELFDeps(%s) = %q, %q; debug/elf reads %q, %q", p, interp, libs, wantInterp, wantLibs)
		}
		if interp != "" && len(libs) > 1 {
			dynamic++
		}
	}
	if dynamic == 0 {
		t.Errorf("no executable needing two libraries or more among %s", paths)
	}

	dir := t.TempDir()
	whole, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"script":   []byte("#!/bin/sh\necho hi\n"),
		"empty":    nil,
		"header":   whole[:64],
		"phdrs":    whole[:200],
		"truncate": whole[:len(whole)/2],
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if interp, libs, err := ELFDeps(p); err == nil && name != "truncate" {
			t.Errorf("ELFDeps(%s) = %q, %q, want an error", name, interp, libs)
		}
	}
}
