package cli

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

func TestParseCpArg(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want cpArg
	}{
		{"./dir", cpArg{path: "./dir"}},
		{"out.bin", cpArg{path: "out.bin"}},
		{"3f2a:/workspace/dir", cpArg{remote: true, ref: "3f2a", path: "/workspace/dir"}},
		{"build:out.bin", cpArg{remote: true, ref: "build", path: "out.bin"}},
		{":/workspace/x", cpArg{remote: true, path: "/workspace/x"}},
		{":", cpArg{remote: true}},
		{"./a:b", cpArg{path: "./a:b"}},
		{"dir/a:b", cpArg{path: "dir/a:b"}},
		{"-", cpArg{path: "-"}},
	}
	for _, tt := range tests {
		if got := parseCpArg(tt.in); got != tt.want {
			t.Errorf("parseCpArg(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestCheckGlob(t *testing.T) {
	t.Parallel()
	// ok: what the sidecar's compileGlob accepts; the rest it answers
	// with no matches whatever the files hold.
	tests := map[string]bool{
		"*.py":      true,
		"**/*.py":   true,
		"/src/*.go": true,
		"a//b":      true,
		"./a":       true,
		"ü*":        true,
		"**/*":      true,
		"":          false,
		"/":         false,
		".":         false,
		"**":        false,
		"src/**":    false,
		"**/**":     false,
		"[":         false,
		"src/[a-/x": false,
		"a\\":       false,
		"a\x00b":    false,
	}
	for pattern, ok := range tests {
		err := checkGlob(pattern)
		if (err == nil) != ok {
			t.Errorf("checkGlob(%q) = %v, want ok %v", pattern, err, ok)
		}
		if _, usage := errors.AsType[*usageError](err); err != nil && !usage {
			t.Errorf("checkGlob(%q) = %T, want a usage error", pattern, err)
		}
	}
}

func TestSandboxPath(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                    "/workspace",
		"/":                   "/workspace",
		".":                   "/workspace",
		"a.txt":               "/workspace/a.txt",
		"./d/../b":            "/workspace/b",
		"workspace":           "/workspace",
		"workspace/x":         "/workspace/x",
		"/workspace/x/":       "/workspace/x",
		"/tmp/t":              "/tmp/t",
		"/outputs/r.pdf":      "/mnt/user-data/outputs/r.pdf",
		"/outputsfoo":         "/outputsfoo",
		"/uploads":            "/mnt/user-data/uploads",
		`sub\win`:             "/workspace/sub/win",
		"/skills/s/SKILL.md":  "/mnt/skills/s/SKILL.md",
		"/workspace/../etc/x": "/etc/x", // the sidecar refuses it; rm passes it on for the same refusal
	}
	for in, want := range tests {
		if got := sandboxPath(in); got != want {
			t.Errorf("sandboxPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeSandbox serves one active sandbox, sb-1, and records the requests to
// its per-sandbox routes as "METHOD /path?query body".
type fakeSandbox struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeSandbox) record(r *http.Request) {
	call := r.Method + " " + strings.TrimPrefix(r.URL.Path, "/v1/sandboxes/sb-1")
	if q := r.URL.RawQuery; q != "" {
		call += "?" + q
	}
	if b, _ := io.ReadAll(r.Body); len(b) > 0 {
		call += " " + strings.TrimSpace(string(b))
	}
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

// serve starts a fake API with the given per-sandbox routes (patterns
// without the /v1/sandboxes/sb-1 prefix) and points the CLI at it.
func (f *fakeSandbox) serve(t *testing.T, routes map[string]http.HandlerFunc) {
	t.Helper()
	home := isolate(t)
	all := map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{{ID: "sb-1", Status: api.StatusActive}}),
	}
	for pattern, h := range routes {
		method, p, _ := strings.Cut(pattern, " ")
		all[method+" /v1/sandboxes/sb-1"+p] = func(w http.ResponseWriter, r *http.Request) {
			f.record(r)
			h(w, r)
		}
	}
	srv := fakeAPI(t, all)
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
}

func mustParse(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestFilesCommands(t *testing.T) {
	mtime := "2026-01-02T03:04:05Z"
	routes := map[string]http.HandlerFunc{
		"POST /files/ls": replyJSON(200, api.LsResult{Entries: []api.LsEntry{
			{Path: "/workspace/d/", IsDir: true, ModifiedAt: mustParse(mtime)},
			{Path: "/workspace/f.txt", Size: 2048, ModifiedAt: mustParse(mtime)},
		}}),
		"POST /files/view": replyJSON(200, api.ViewResult{Content: "two\nthree", Lines: 3}),
		"POST /files":      replyJSON(201, api.FileCreateResult{Path: "/workspace/n.txt", Size: 5, Created: true}),
		"POST /files/glob": replyJSON(200, api.GlobResult{Matches: []api.LsEntry{{Path: "/workspace/a.py"}}, Truncated: true}),
		"POST /files/grep": replyJSON(200, api.GrepResult{Matches: []api.GrepMatch{{Path: "/workspace/a.py", Line: 3, Text: "def f():"}}}),
		"POST /exec":       replyJSON(200, api.ExecResult{ExitCode: 0}),
		"POST /files/str-replace": func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(api.StrReplaceResult{Path: "/workspace/a.py", Replaced: true, Occurrences: 2})
		},
	}
	tests := []struct {
		name      string
		stdin     string
		args      []string
		want      result
		wantCalls []string
	}{
		{
			name: "ls",
			args: []string{"files", "ls", "/workspace"},
			want: result{},
		},
		{
			name:      "view range",
			args:      []string{"files", "view", "a.txt", "--start-line", "2", "--end-line", "3"},
			want:      result{stdout: "two\nthree\n"},
			wantCalls: []string{`POST /files/view {"path":"a.txt","view_range":[2,3]}`},
		},
		{
			name:      "create from stdin",
			stdin:     "hello",
			args:      []string{"files", "create", "n.txt"},
			want:      result{stderr: "created /workspace/n.txt (5 bytes)\n"},
			wantCalls: []string{`POST /files {"path":"n.txt","content":"hello"}`},
		},
		{
			name:      "edit",
			args:      []string{"files", "edit", "a.py", "--old", "x", "--new", "", "--replace-all"},
			want:      result{stderr: "replaced 2 occurrences in /workspace/a.py\n"},
			wantCalls: []string{`POST /files/str-replace {"path":"a.py","old_str":"x","new_str":"","replace_all":true}`},
		},
		{
			name:      "glob",
			args:      []string{"files", "glob", "**/*.py", "--path", "/workspace/src"},
			want:      result{stdout: "/workspace/a.py\n", stderr: "(only the first 1 matches are shown)\n"},
			wantCalls: []string{`POST /files/glob {"pattern":"**/*.py","path":"/workspace/src"}`},
		},
		{
			name:      "grep",
			args:      []string{"files", "grep", `def \w+`, "--glob", "*.py", "--max-matches", "9"},
			want:      result{stdout: "/workspace/a.py:3:def f():\n"},
			wantCalls: []string{`POST /files/grep {"pattern":"def \\w+","glob":"*.py","max_matches":9}`},
		},
		{
			name:      "rm quotes paths and maps / to the workspace",
			args:      []string{"files", "rm", "-r", "it's here", "/outputs/x"},
			want:      result{stderr: "removed /workspace/it's here\nremoved /mnt/user-data/outputs/x\n"},
			wantCalls: []string{`POST /exec {"command":"rm -r -- '/workspace/it'\\''s here' /mnt/user-data/outputs/x"}`},
		},
		{
			name: "rm refuses a root",
			args: []string{"files", "rm", "-r", "/"},
			want: result{code: exitUsage, stderr: "error: refusing to remove /workspace, a root of the sandbox\nhint: remove what is inside it instead, e.g. with 'boxkite exec'\n"},
		},
		{
			name: "edit needs --old",
			args: []string{"files", "edit", "a.py", "--new", "y"},
			want: result{code: exitUsage, stderr: "error: give the text to replace with --old (not empty) and its replacement with --new\nhint: run 'boxkite files edit --help' for usage\n"},
		},
		{
			name: "create needs content",
			args: []string{"files", "create", "n.txt", "--content", "a", "--content-file", "f"},
			want: result{code: exitUsage, stderr: "error: give --content or --content-file, not both\nhint: run 'boxkite files create --help' for usage\n"},
		},
		{
			name: "cp needs a sandbox side",
			args: []string{"files", "cp", "a", "b"},
			want: result{code: exitUsage, stderr: "error: neither side is in a sandbox\nhint: write the sandbox side as ID:PATH or :PATH\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSandbox{}
			f.serve(t, routes)
			got := runCLI(t, tt.stdin, tt.args...)
			if tt.name == "ls" {
				// Times are shown in local time; check the shape only.
				if !strings.Contains(got.stdout, "-     ") || !strings.Contains(got.stdout, "2.0KiB") || !strings.HasSuffix(got.stdout, "/workspace/f.txt\n") {
					t.Errorf("ls output:\n%s", got.stdout)
				}
				got.stdout = ""
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(result{})); diff != "" {
				t.Errorf("boxkite %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
			}
			if tt.wantCalls != nil {
				if diff := cmp.Diff(tt.wantCalls, f.calls); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestFilesErrors(t *testing.T) {
	f := &fakeSandbox{}
	f.serve(t, map[string]http.HandlerFunc{
		"POST /files/str-replace": replyJSON(200, api.StrReplaceResult{Path: "/workspace/a.py"}),
		"POST /exec":              replyJSON(200, api.ExecResult{ExitCode: 1, Stderr: "rm: cannot remove '/workspace/x': No such file or directory\n"}),
		"POST /files/view": replyJSON(404, api.ErrorEnvelope{Error: &api.Error{
			Code: api.CodeNotFound, Message: "File not found: nope",
		}}),
		"POST /files/grep": replyJSON(200, api.GrepResult{Error: "Search timed out after 30s -- narrow the path"}),
	})
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"files", "edit", "a.py", "--old", "zzz", "--new", "y"}, exitError, "error: --old text not found in /workspace/a.py; nothing changed"},
		{[]string{"files", "rm", "x"}, exitNotFound, "error: rm: cannot remove '/workspace/x': No such file or directory"},
		{[]string{"files", "view", "nope"}, exitNotFound, "error: view nope: File not found: nope"},
		// grep(1)'s convention: 2 for an error, 1 for no match.
		{[]string{"files", "grep", "x"}, exitUsage, "error: Search timed out after 30s -- narrow the path\nhint: "},
		// A pattern the sidecar would refuse is refused before asking.
		{[]string{"files", "grep", "("}, exitUsage, "error: invalid PATTERN \"(\": missing closing ): `(`\nhint: PATTERN is a regular expression (RE2)"},
	}
	for _, tt := range tests {
		got := runCLI(t, "", tt.args...)
		if got.code != tt.wantCode || !strings.HasPrefix(got.stderr, tt.wantErr) {
			t.Errorf("boxkite %s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), got.code, got.stderr, tt.wantCode, tt.wantErr)
		}
	}
}

// 9 MiB of newlines is under the 10 MiB of content but 18 MiB as JSON:
// files create says so, and how to copy it, before sending anything.
func TestFilesCreateTooLargeAsJSON(t *testing.T) {
	f := &fakeSandbox{}
	f.serve(t, map[string]http.HandlerFunc{}) // any request fails the test
	got := runCLI(t, strings.Repeat("\n", 9<<20), "files", "create", "big.txt")
	want := "error: content is 9437184 bytes, but 18874416 as JSON"
	if got.code != exitError || !strings.HasPrefix(got.stderr, want) || !strings.Contains(got.stderr, "16 MiB") ||
		!strings.Contains(got.stderr, "hint: copy large files with 'boxkite files cp'") {
		t.Errorf("files create of 9 MiB of newlines: exit %d, stderr %q", got.code, got.stderr)
	}
}

// TestFilesGlobNoMatch: a glob matching nothing says so on stderr, as
// every empty listing does, instead of printing nothing; --json prints
// the empty result alone.
func TestFilesGlobNoMatch(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want result
	}{
		{"human", []string{"files", "glob", "*.py", "--path", "/tmp"}, result{stderr: "no files under /tmp match \"*.py\"\n"}},
		{"workspace", []string{"files", "glob", "src/**/*.go"}, result{stderr: "no files under /workspace match \"src/**/*.go\"\n"}},
		{"json", []string{"files", "glob", "*.py", "--json"}, result{stdout: "{\n  \"matches\": []\n}\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSandbox{}
			f.serve(t, map[string]http.HandlerFunc{"POST /files/glob": replyJSON(200, api.GlobResult{Matches: []api.LsEntry{}})})
			got := runCLI(t, "", tt.args...)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(result{})); diff != "" {
				t.Errorf("boxkite %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
			}
		})
	}
}
