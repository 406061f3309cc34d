package sidecar

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plantTree builds a workspace with symlinks that try to lead out of it,
// and a second allowed root next to it. Both are returned resolved.
func plantTree(t testing.TB) (ws, other string) {
	t.Helper()
	ws, other = t.TempDir(), t.TempDir()
	for _, dir := range []string{"sub/deep", "sub2"} {
		if err := os.MkdirAll(filepath.Join(ws, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"root":     "/",
		"up":       "..",
		"other":    other,
		"etc":      "/etc",
		"loop":     "loop",
		"dangle":   "/nonexistent-boxkite-dir/x",
		"rel":      "sub",
		"sub/back": "../..",
		"sub/in":   "deep",
		"sub/hop":  "../root",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		t.Fatal(err)
	}
	if other, err = filepath.EvalSymlinks(other); err != nil {
		t.Fatal(err)
	}
	return ws, other
}

func TestResolvePath(t *testing.T) {
	t.Parallel()
	ws, other := plantTree(t)
	roots := []string{ws, other}
	tests := []struct {
		in   string
		want string // "" means refused
	}{
		{"", ws},
		{".", ws},
		{"sub", ws + "/sub"},
		{"./sub/deep/", ws + "/sub/deep"},
		{ws + "/sub", ws + "/sub"},
		{"sub/../sub2", ws + "/sub2"},
		{"rel/deep", ws + "/sub/deep"},
		{"sub/in", ws + "/sub/deep"},
		{"other", other},
		{"other/new/file", other + "/new/file"},
		{"new", ws + "/new"},
		{"new/dirs/file.txt", ws + "/new/dirs/file.txt"},
		{"up/" + filepath.Base(other), other},
		{"..", ""},
		{"../..", ""},
		{"../../../../etc/passwd", ""},
		{"/", ""},
		{"/etc", ""},
		{"/etc/passwd", ""},
		{"root", ""},
		{"root/etc", ""},
		{"etc", ""},
		{"etc/new", ""},
		{"up", ""},
		{"sub/back", ""},
		{"sub/hop/etc", ""},
		{"loop", ""},
		{"loop/x", ""},
		{"dangle", ""},
		{"dangle/below", ""},
		{"file/x", ""},
		{"a\x00b", ""},
	}
	for _, tt := range tests {
		got, err := resolvePath(ws, roots, tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("resolvePath(%q) = %q, want refused", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolvePath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestResolveAllowsTmp(t *testing.T) {
	t.Parallel()
	h := New(Options{Workspace: t.TempDir()})
	got, err := h.resolve("/tmp/")
	if err != nil || got != "/tmp" {
		t.Errorf("resolve(/tmp/) = %q, %v; want /tmp", got, err)
	}
}

// FuzzResolvePath checks that no input, however it combines dots, slashes
// and the planted symlinks, resolves outside the allowed roots, and that
// the result is already fully resolved, so using it follows no link.
func FuzzResolvePath(f *testing.F) {
	for _, seed := range []string{
		"", ".", "sub", "../x", "/etc/passwd", "root/etc", "up/up", "sub/back/x",
		"other/../..", "dangle/x", "loop", "sub/hop/tmp", "rel//in/../..", "file/..",
	} {
		f.Add(seed)
	}
	ws, other := plantTree(f)
	roots := []string{ws, other}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := resolvePath(ws, roots, p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("resolvePath(%q) = %q, not a clean absolute path", p, got)
		}
		if !inside(got, ws) && !inside(got, other) {
			t.Fatalf("resolvePath(%q) = %q, outside %s and %s", p, got, ws, other)
		}
		again, err := realPath(got)
		if err != nil || again != got {
			t.Fatalf("resolvePath(%q) = %q, which resolves further to %q, %v", p, got, again, err)
		}
	})
}

// inside is the fuzz oracle, written apart from within on purpose.
func inside(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
