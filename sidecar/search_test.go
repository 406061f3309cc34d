package sidecar

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxkite/boxkite/client/api"
)

// searchTree adds files to search to a planted tree.
func searchTree(t *testing.T, fs fileServer) {
	t.Helper()
	for name, content := range map[string]string{
		"main.py":           "import os\nprint('hello')\n",
		"pkg/util.py":       "def hello():\n    return 1\r\n",
		"pkg/deep/x.py":     "HELLO = 2\n",
		"pkg/notes.md":      "hello notes\n",
		"pkg/bin.dat":       "hello\x00binary\n",
		"pkg/latin1.txt":    "hello \xe9t\xe9\n",
		".hidden/h.py":      "hello hidden\n",
		"src/pkg/nested.py": "hello again\n",
	} {
		writeFile(t, fs.ws+"/"+name, content, 0o644)
	}
	if err := syscall.Mkfifo(fs.ws+"/pkg/fifo.py", 0o644); err != nil { // must not hang the search
		t.Fatal(err)
	}
	if err := os.Symlink(fs.outside+"/secret.txt", fs.ws+"/pkg/leak.py"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../main.py", fs.ws+"/pkg/alias.py"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs.outside+"/hello.py", "hello from outside\n", 0o644)
}

func TestGlob(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	searchTree(t, fs)
	tests := []struct {
		pattern, path string
		want          []string
	}{
		{"*.py", "", []string{"/workspace/.hidden/h.py", "/workspace/main.py", "/workspace/pkg/alias.py", "/workspace/pkg/deep/x.py", "/workspace/pkg/util.py", "/workspace/src/pkg/nested.py"}},
		{"pkg/*.py", "/", []string{"/workspace/pkg/alias.py", "/workspace/pkg/util.py", "/workspace/src/pkg/nested.py"}},
		{"/pkg/**/*.py", "", []string{"/workspace/pkg/alias.py", "/workspace/pkg/deep/x.py", "/workspace/pkg/util.py", "/workspace/src/pkg/nested.py"}},
		{"*.py", "pkg", []string{"/workspace/pkg/alias.py", "/workspace/pkg/deep/x.py", "/workspace/pkg/util.py"}},
		{"main.py", "main.py", []string{"/workspace/main.py"}},
		{"*.md", "/skills", []string{"/mnt/skills/s/SKILL.md"}},
		{"*.txt", "", []string{"/workspace/pkg/latin1.txt"}},
		{"secret*", "", nil},      // the planted link to a file outside is skipped
		{"deep", "", nil},         // directories are not matched
		{"**", "", nil},           // only directories: nothing
		{"[", "", nil},            // malformed: nothing, not an error
		{"", "", nil},             // empty: nothing
		{"../outside/*", "", nil}, // ".." matches no entry name
		{"*", "nope", nil},
	}
	for _, tt := range tests {
		got := postOK[api.GlobResult](t, fs, "/glob", api.GlobRequest{Pattern: tt.pattern, Path: tt.path})
		var paths []string
		for _, m := range got.Matches {
			if m.IsDir || m.ModifiedAt.IsZero() {
				t.Errorf("glob %q: match %+v", tt.pattern, m)
			}
			paths = append(paths, m.Path)
		}
		if got.Matches == nil || got.Truncated {
			t.Errorf("glob %q in %q: matches nil %v, truncated %v", tt.pattern, tt.path, got.Matches == nil, got.Truncated)
		}
		if diff := cmp.Diff(tt.want, paths, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("glob %q in %q (-want +got):\n%s", tt.pattern, tt.path, diff)
		}
	}
}

func TestGlobCap(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{Limits: FileLimits{GlobMaxMatches: 3}})
	for i := range 5 {
		writeFile(t, fmt.Sprintf("%s/many/f%d.txt", fs.ws, i), "", 0o644)
	}
	got := postOK[api.GlobResult](t, fs, "/glob", api.GlobRequest{Pattern: "*.txt", Path: "many"})
	if len(got.Matches) != 3 || !got.Truncated {
		t.Errorf("glob past the cap = %d matches, truncated %v; want 3, true", len(got.Matches), got.Truncated)
	}
}

func TestGlobPatternMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, rel string
		want         bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "x/y/a.go", true},
		{"x/*.go", "x/a.go", true},
		{"x/*.go", "w/x/a.go", true},
		{"x/*.go", "x/y/a.go", false},
		{"x/**/a.go", "x/a.go", true},
		{"x/**/a.go", "x/1/2/3/a.go", true},
		{"**/**/**/a", "a", true},
		{"a?c", "abc", true},
		{"[ab]c", "bc", true},
		{"*.go", "a.gox", false},
	}
	for _, tt := range tests {
		g, ok := compileGlob(tt.pattern)
		if !ok {
			t.Errorf("compileGlob(%q) refused", tt.pattern)
			continue
		}
		if got := g.match(tt.rel); got != tt.want {
			t.Errorf("glob %q matches %q = %v, want %v", tt.pattern, tt.rel, got, tt.want)
		}
	}
}

func TestGrep(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	searchTree(t, fs)
	m := func(p string, line int, text string) api.GrepMatch {
		return api.GrepMatch{Path: p, Line: line, Text: text}
	}
	tests := []struct {
		name string
		req  api.GrepRequest
		want api.GrepResult
	}{
		{"everywhere", api.GrepRequest{Pattern: "hello"}, api.GrepResult{Matches: []api.GrepMatch{
			m("/workspace/.hidden/h.py", 1, "hello hidden"),
			m("/workspace/main.py", 2, "print('hello')"),
			m("/workspace/pkg/alias.py", 2, "print('hello')"),
			m("/workspace/pkg/notes.md", 1, "hello notes"),
			m("/workspace/pkg/util.py", 1, "def hello():"),
			m("/workspace/src/pkg/nested.py", 1, "hello again"),
		}}},
		{"case-insensitive", api.GrepRequest{Pattern: "(?i)^hello =", Path: "pkg"}, api.GrepResult{Matches: []api.GrepMatch{m("/workspace/pkg/deep/x.py", 1, "HELLO = 2")}}},
		{"glob by name", api.GrepRequest{Pattern: "hello", Glob: "*.md"}, api.GrepResult{Matches: []api.GrepMatch{m("/workspace/pkg/notes.md", 1, "hello notes")}}},
		{"glob by workspace path", api.GrepRequest{Pattern: "hello", Path: "pkg", Glob: "pkg/u*"}, api.GrepResult{Matches: []api.GrepMatch{m("/workspace/pkg/util.py", 1, "def hello():")}}},
		{"glob by relative path", api.GrepRequest{Pattern: "hello", Glob: "src/*/n?sted.py"}, api.GrepResult{Matches: []api.GrepMatch{m("/workspace/src/pkg/nested.py", 1, "hello again")}}},
		{"CRLF stripped", api.GrepRequest{Pattern: `return 1$`, Path: "pkg/util.py"}, api.GrepResult{Matches: []api.GrepMatch{m("/workspace/pkg/util.py", 2, "    return 1")}}},
		{"one file", api.GrepRequest{Pattern: "os", Path: "/workspace/main.py"}, api.GrepResult{Matches: []api.GrepMatch{m("/workspace/main.py", 1, "import os")}}},
		{"max_matches", api.GrepRequest{Pattern: "hello", MaxMatches: 2}, api.GrepResult{Truncated: true, Matches: []api.GrepMatch{
			m("/workspace/.hidden/h.py", 1, "hello hidden"),
			m("/workspace/main.py", 2, "print('hello')"),
		}}},
		{"max_matches clamped up to 1", api.GrepRequest{Pattern: "hello", MaxMatches: -7}, api.GrepResult{Truncated: true, Matches: []api.GrepMatch{
			m("/workspace/.hidden/h.py", 1, "hello hidden"),
		}}},
		{"missing path", api.GrepRequest{Pattern: "x", Path: "nope"}, api.GrepResult{}},
		{"read-only root", api.GrepRequest{Pattern: "skill", Path: "/skills"}, api.GrepResult{Matches: []api.GrepMatch{m("/mnt/skills/s/SKILL.md", 1, "skill")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := postOK[api.GrepResult](t, fs, "/grep", tt.req)
			if got.Matches == nil {
				t.Errorf("matches is null, want a list")
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("grep %+v (-want +got):\n%s", tt.req, diff)
			}
		})
	}
}

// TestGrepRefusesBadPatterns: a pattern or glob that does not compile is
// a 422 naming the field, not a 200 with an error inside (issue 19).
func TestGrepRefusesBadPatterns(t *testing.T) {
	fs := newFileServer(t, Options{})
	for _, tt := range []struct {
		req                api.GrepRequest
		wantField, wantMsg string
	}{
		{api.GrepRequest{Pattern: "a(b"}, "pattern", "Invalid regex pattern: error parsing regexp: missing closing ): `a(b`"},
		{api.GrepRequest{Pattern: "a", Glob: "[z-a]"}, "glob", "Invalid glob pattern"},
	} {
		status, body := fs.post(t, "/grep", tt.req)
		wantError(t, "grep", status, body, http.StatusUnprocessableEntity, tt.wantMsg)
		if e := decodeError(t, body); e.Code != api.CodeValidation {
			t.Errorf("grep %+v: code %q, want validation_error", tt.req, e.Code)
		}
	}
}

func TestGrepCaps(t *testing.T) {
	t.Parallel()
	t.Run("max_matches clamped down to 5000", func(t *testing.T) {
		t.Parallel()
		fs := newFileServer(t, Options{})
		writeFile(t, fs.ws+"/many.txt", strings.Repeat("x\n", 6000), 0o644)
		got := postOK[api.GrepResult](t, fs, "/grep", api.GrepRequest{Pattern: "x", MaxMatches: 1 << 30})
		if len(got.Matches) != api.MaxGrepMatches || !got.Truncated {
			t.Errorf("grep = %d matches, truncated %v; want %d, true", len(got.Matches), got.Truncated, api.MaxGrepMatches)
		}
		got = postOK[api.GrepResult](t, fs, "/grep", api.GrepRequest{Pattern: "x"})
		if len(got.Matches) != api.DefaultGrepMatches || !got.Truncated {
			t.Errorf("grep = %d matches, truncated %v; want the default %d, true", len(got.Matches), got.Truncated, api.DefaultGrepMatches)
		}
	})
	t.Run("bytes scanned", func(t *testing.T) {
		t.Parallel()
		fs := newFileServer(t, Options{Limits: FileLimits{GrepMaxBytes: 100}})
		writeFile(t, fs.ws+"/a.txt", strings.Repeat("line\n", 15)+"needle\n", 0o644) // 75 bytes
		writeFile(t, fs.ws+"/b.txt", strings.Repeat("line\n", 15)+"needle\n", 0o644)
		got := postOK[api.GrepResult](t, fs, "/grep", api.GrepRequest{Pattern: "needle"})
		want := api.GrepResult{Truncated: true, Matches: []api.GrepMatch{{Path: "/workspace/a.txt", Line: 16, Text: "needle"}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("grep past the byte cap (-want +got):\n%s", diff)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fs := newFileServer(t, Options{Limits: FileLimits{GrepTimeout: time.Nanosecond}})
		writeFile(t, fs.ws+"/a.txt", "needle\n", 0o644)
		got := postOK[api.GrepResult](t, fs, "/grep", api.GrepRequest{Pattern: "needle"})
		if len(got.Matches) != 0 || !got.Truncated || !strings.HasPrefix(got.Error, "Search timed out after 1ns -- ") {
			t.Errorf("grep past its time = %+v", got)
		}
	})
	t.Run("long lines clipped", func(t *testing.T) {
		t.Parallel()
		fs := newFileServer(t, Options{})
		writeFile(t, fs.ws+"/long.txt", "needle"+strings.Repeat("é", 5000)+"\n", 0o644)
		got := postOK[api.GrepResult](t, fs, "/grep", api.GrepRequest{Pattern: "needle"})
		if len(got.Matches) != 1 || got.Matches[0].Text != "needle"+strings.Repeat("é", maxMatchText-6)+"..." {
			t.Errorf("grep of a long line = %+v", got)
		}
	})
}

func TestFnmatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"*.py", "a.py", true},
		{"*.py", "dir/a.py", true}, // fnmatch's * crosses "/"
		{"*.py", "a.pyc", false},
		{"?.py", "ab.py", false},
		{"[!a]*", "b", true},
		{"[!a]*", "a", false},
		{"[]]", "]", true},
		{"[a-c]", "b", true},
		{"[", "[", true},
		{"a.b", "axb", false},
		{"[[:alpha:]]", ":]", true}, // no POSIX classes in fnmatch
		{"é*", "été", true},
	}
	for _, tt := range tests {
		re, err := fnmatch(tt.pat)
		if err != nil {
			t.Errorf("fnmatch(%q): %v", tt.pat, err)
			continue
		}
		if got := re.MatchString(tt.name); got != tt.want {
			t.Errorf("fnmatch(%q) matches %q = %v, want %v", tt.pat, tt.name, got, tt.want)
		}
	}
}

// FuzzGlobArgs checks that no glob pattern or base path panics or returns a
// match outside the typed roots.
func FuzzGlobArgs(f *testing.F) {
	for _, s := range [][2]string{{"*.py", ""}, {"**/*", "/"}, {"../*", "up"}, {"[", ""}, {"**/**/x", "sub"}, {"*", "/mnt"}, {"/etc/*", ""}, {"*", "root"}} {
		f.Add(s[0], s[1])
	}
	tr := plantTree(f)
	h := New(Options{Roots: tr.roots(), Limits: FileLimits{GrepTimeout: time.Second}})
	f.Fuzz(func(t *testing.T, pattern, p string) {
		got, err := h.globFiles(t.Context(), api.GlobRequest{Pattern: pattern, Path: p})
		if err != nil {
			return
		}
		for _, m := range got.Matches {
			checkInside(t, h, m.Path)
		}
	})
}

// FuzzGrepArgs does the same for grep's pattern, glob and path.
func FuzzGrepArgs(f *testing.F) {
	for _, s := range [][3]string{{"x", "", "*.py"}, {"(", "", ""}, {"", "/", "[!"}, {".*", "up", "**"}, {"s", "/skills", "*/*"}, {"e", "etc", ""}} {
		f.Add(s[0], s[1], s[2], 3)
	}
	tr := plantTree(f)
	h := New(Options{Roots: tr.roots(), Limits: FileLimits{GrepTimeout: time.Second}})
	f.Fuzz(func(t *testing.T, pattern, p, glob string, maxMatches int) {
		got, err := h.grepFiles(t.Context(), api.GrepRequest{Pattern: pattern, Path: p, Glob: glob, MaxMatches: maxMatches})
		if err != nil {
			return
		}
		if len(got.Matches) > api.MaxGrepMatches {
			t.Fatalf("grep returned %d matches", len(got.Matches))
		}
		for _, m := range got.Matches {
			checkInside(t, h, m.Path)
		}
	})
}

// checkInside fails unless the virtual path v resolves inside the roots.
func checkInside(t *testing.T, h *Handler, v string) {
	t.Helper()
	res, err := resolveForTest(t, h, v, false)
	if err != nil {
		t.Fatalf("result %q does not resolve: %v", v, err)
	}
	if real, err := realPathOracle(res.host); err != nil || real != res.host {
		t.Fatalf("result %q is not a real path inside the roots: %q", v, real)
	}
}
