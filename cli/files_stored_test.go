package cli

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
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

// TestFilesLsFromStorage: ls --from-storage of a directory that holds no
// stored file exits 3, and of a path outside /workspace exits 2; both
// said "… is empty; create a file with 'boxkite files create PATH'" and
// exited 0, and /etc listed the stored /workspace/etc.
func TestFilesLsFromStorage(t *testing.T) {
	f := &fakeSandbox{}
	f.serve(t, map[string]http.HandlerFunc{
		"GET /storage/files": replyJSON(200, api.StoredFiles{Files: []api.StoredFile{{Path: "res/a.txt", Size: 3}, {Path: "etc/b.txt", Size: 1}}}),
	})
	tests := []struct {
		path     string
		wantCode int
		wantOut  string
	}{
		{"/workspace/res", 0, "/workspace/res/a.txt"},
		{"res", 0, "/workspace/res/a.txt"},
		{"/workspace/nope", exitNotFound, ""},
		{"/etc", exitUsage, ""},
	}
	for _, tt := range tests {
		r := runCLI(t, "", "files", "ls", "--from-storage", tt.path)
		if r.code != tt.wantCode || !strings.Contains(r.stdout, tt.wantOut) || (tt.wantCode != 0 && !strings.Contains(r.stderr, "hint: ")) {
			t.Errorf("files ls --from-storage %s: %+v, want exit %d", tt.path, r, tt.wantCode)
		}
		if strings.Contains(r.stdout, "etc/b.txt") {
			t.Errorf("files ls --from-storage %s listed /workspace/etc: %q", tt.path, r.stdout)
		}
	}
}
