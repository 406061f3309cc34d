package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestStoredPaths(t *testing.T) {
	rels := []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"/", "", true},
		{"/workspace", "", true},
		{"a/b.txt", "a/b.txt", true},
		{"/workspace/a/../b", "b", true},
		{"/tmp/x", "", false},
		{"/workspacex/y", "", false},
		{"../etc", "", false},
	}
	for _, tt := range rels {
		if got, ok := storedRel(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("storedRel(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	targets := []struct {
		rel, p, want string
		ok           bool
	}{
		{"notes", "notes/a.txt", "out/a.txt", true},
		{"notes", "notes/sub/b.txt", "out/sub/b.txt", true},
		{"", "x/y", "out/x/y", true},
		{"notes", "notesx/a.txt", "", false},
		{"notes", "notes/../../etc/passwd", "", false},
		{"", "/etc/passwd", "", false},
		{"", "a/./b", "", false},
		{"notes", "notes/", "", false},
		{"", `a\..\..\b`, "", false},
	}
	for _, tt := range targets {
		got, ok := storedTarget("out", tt.rel, tt.p)
		if ok != tt.ok || (ok && got != filepath.FromSlash(tt.want)) {
			t.Errorf("storedTarget(out, %q, %q) = %q, %v; want %q, %v", tt.rel, tt.p, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzStoredTarget: a stored file's local name never leaves the
// directory it is copied to, whatever the server names it.
func FuzzStoredTarget(f *testing.F) {
	for _, s := range []string{"notes/a.txt", "../x", "notes/../../x", "/abs", "a//b", `a\b`, "notes/"} {
		f.Add("notes", s)
	}
	f.Fuzz(func(t *testing.T, rel, p string) {
		dir := filepath.Join("base", "out")
		got, ok := storedTarget(dir, rel, p)
		if !ok {
			return
		}
		r, err := filepath.Rel(dir, got)
		if err != nil || r == "." || !filepath.IsLocal(r) || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			t.Fatalf("storedTarget(%q, %q, %q) = %q, outside %s", dir, rel, p, got, dir)
		}
	})
}
