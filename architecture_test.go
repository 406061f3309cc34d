package boxkite_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const architectureDoc = "docs/architecture.md"

// docLevel reads a level of the package table: a number, or a number
// with a prime (1′), which sits between that level and the next.
func docLevel(s string) (float64, bool) {
	prime := strings.HasSuffix(s, "′")
	n, err := strconv.Atoi(strings.TrimSuffix(s, "′"))
	if err != nil {
		return 0, false
	}
	if prime {
		return float64(n) + 0.5, true
	}
	return float64(n), true
}

// docTable returns the package table of docs/architecture.md: each
// package named in a row's first cell, with its level.
func docTable(t *testing.T, doc string) map[string]string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		t.Fatalf("%s has no ## Packages section", architectureDoc)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| ([^|]+) \| ([^|]+) \|`)
	name := regexp.MustCompile("`([^`]+)`")
	levels := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			levels[n[1]] = strings.TrimSpace(m[2])
		}
	}
	if len(levels) < 20 {
		t.Fatalf("read %d packages from %s's table: has its form changed?", len(levels), architectureDoc)
	}
	return levels
}

// ourImports maps each package of ours (module-relative) to the packages
// of ours it imports directly.
func ourImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := ourPkg(fields[0])
		imports[pkg] = nil
		for _, dep := range fields[1:] {
			if rel := ourPkg(dep); rel != "" {
				imports[pkg] = append(imports[pkg], rel)
			}
		}
	}
	return imports
}

// TestArchitectureDoc keeps docs/architecture.md's package table true:
// every package under server/ has a row, every row names a package that
// exists and has its import rule in deps_test.go, and no package imports
// one at a higher level of the table.
func TestArchitectureDoc(t *testing.T) {
	raw, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	levels := docTable(t, string(raw))
	imports := ourImports(t)
	for pkg, level := range levels {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("%s's table names %s, which is no package", architectureDoc, pkg)
		}
		if _, ok := rules[pkg]; !ok {
			t.Errorf("%s's table names %s, which has no row in deps_test.go's rules", architectureDoc, pkg)
		}
		if _, ok := docLevel(level); !ok {
			t.Errorf("%s's table gives %s the level %q: want a number, or one with a prime (1′)", architectureDoc, pkg, level)
		}
	}
	for pkg, deps := range imports {
		if pkg == "server" || strings.HasPrefix(pkg, "server/") {
			if _, ok := levels[pkg]; !ok {
				t.Errorf("%s has no row in %s's package table", pkg, architectureDoc)
			}
		}
		from, ok := docLevel(levels[pkg])
		if !ok {
			continue
		}
		for _, dep := range deps {
			if to, ok := docLevel(levels[dep]); ok && to > from {
				t.Errorf("%s (level %s) imports %s (level %s), above it: fix the table's levels or the import", pkg, levels[pkg], dep, levels[dep])
			}
		}
	}
}

// TestArchitectureDocPaths: every file and package docs/architecture.md
// names in backquotes exists (a moved or renamed one fails here).
func TestArchitectureDocPaths(t *testing.T) {
	raw, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	path := regexp.MustCompile("`((?:server|sidecar|client|cmd|cli|internal|tools|tui|handoff|sdk)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`")
	for _, m := range path.FindAllStringSubmatch(string(raw), -1) {
		p := m[1]
		if _, err := os.Stat(p); err == nil {
			continue
		}
		// A package and one of its names: server/internal/sidecar.Clients.
		if dir, _, ok := strings.Cut(p, "."); ok && !strings.HasSuffix(p, ".go") {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				continue
			}
		}
		t.Errorf("%s names %s, which does not exist", architectureDoc, p)
	}
}
