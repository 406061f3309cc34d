package boxkite_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines is the most lines of non-test Go a package under
// server/ may hold (issue 20: a package past it has more than one job,
// and the next feature should find the seam before it lands there).
const maxPackageLines = 5000

// packageCeilings are the packages past maxPackageLines for now, each
// with the most lines it may hold until it is split and why it is over:
// a ceiling, not an exemption, so that it cannot grow unnoticed either.
// Remove a row once its package is under maxPackageLines.
var packageCeilings = map[string]struct {
	lines int
	why   string
}{
	"server/local": {5300, "session 30 moved hostcap, snapstore and hugecopy out (5,983 to 4,887) while the delete-path and OOM work added 244 lines to it; next out: the jail's process and socket plumbing (state.go's process helpers, sockets.go)"},
}

// TestPackageSize fails for any package under server/ whose non-test Go
// files (those of every platform: an _other.go counts as much as a
// _linux.go) hold more than maxPackageLines lines. Split it along
// docs/architecture.md's layout: a cohesive part that knows nothing of
// the rest (as server/local/loopdisk and server/sqlstore/sqldb do) moves
// to a package of its own, its tests with it.
func TestPackageSize(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}", "./server/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 20 {
		t.Fatalf("go list ./server/... found %d packages: has the layout changed?", len(lines))
	}
	for _, line := range lines {
		pkg, dir, _ := strings.Cut(line, "\t")
		n, err := goLines(dir)
		if err != nil {
			t.Fatal(err)
		}
		limit, why := maxPackageLines, ""
		if c, ok := packageCeilings[ourPkg(pkg)]; ok {
			if n <= maxPackageLines {
				t.Errorf("%s holds %d lines, within %d: remove its row from packageCeilings", ourPkg(pkg), n, maxPackageLines)
			}
			limit, why = c.lines, " (its ceiling: "+c.why+")"
		}
		if n > limit {
			t.Errorf("%s holds %d lines of non-test Go, more than %d%s: move a cohesive part into a package of its own (docs/architecture.md)", ourPkg(pkg), n, limit, why)
		}
	}
}

// goLines counts the lines of the non-test .go files in dir (not its
// subdirectories, which are packages of their own).
func goLines(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		n += bytes.Count(b, []byte("\n"))
	}
	return n, nil
}

// TestGoLines: the count takes a package's non-test .go files, of every
// platform, and nothing else: not its tests, not its subpackages, not
// other files.
func TestGoLines(t *testing.T) {
	dir := t.TempDir()
	for name, lines := range map[string]int{
		"a.go": 3, "b_linux.go": 2, "c_other.go": 4, "a_test.go": 10, "README.md": 5, "sub/d.go": 7,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte("x\n"), lines), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := goLines(dir); err != nil || n != 9 {
		t.Errorf("goLines = %d, %v; want 9", n, err)
	}
}
