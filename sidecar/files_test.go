package sidecar

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxkite/boxkite/client/api"
)

// fileServer is a sidecar serving a planted tree.
type fileServer struct {
	tree
	url string
}

func newFileServer(t *testing.T, opts Options) fileServer {
	t.Helper()
	tr := plantTree(t)
	opts.Token, opts.Workspace, opts.Roots = testToken, tr.ws, tr.roots()
	srv, _ := newServer(t, opts)
	return fileServer{tree: tr, url: srv.URL}
}

var authHeader = http.Header{api.HeaderSidecarToken: {testToken}}

// post sends req as JSON to route.
func (fs fileServer) post(t *testing.T, route string, req any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return call(t, http.MethodPost, fs.url+route, authHeader, string(b))
}

// postOK posts req and decodes a 200 answer.
func postOK[T any](t *testing.T, fs fileServer, route string, req any) T {
	t.Helper()
	status, body := fs.post(t, route, req)
	var out T
	if status != http.StatusOK {
		t.Fatalf("POST %s %+v = %d %s, want 200", route, req, status, body)
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return out
}

// wantError checks an error answer's status and message.
func wantError(t *testing.T, what string, status int, body []byte, wantStatus int, wantMsg string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s = %d %s, want %d", what, status, body, wantStatus)
		return
	}
	e := decodeError(t, body)
	if !strings.Contains(e.Message, wantMsg) {
		t.Errorf("%s: message %q, want it to contain %q", what, e.Message, wantMsg)
	}
	if e.Hint == "" {
		t.Errorf("%s: %q has no hint", what, e.Message)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func TestFileCreate(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	tests := []struct {
		path      string
		wantVirt  string
		wantHost  string
		overwrite bool // the name exists: created is false
	}{
		{"a.txt", "/workspace/a.txt", fs.ws + "/a.txt", false},
		{"/workspace/new/dirs/b.txt", "/workspace/new/dirs/b.txt", fs.ws + "/new/dirs/b.txt", false},
		{"/", "", "", false}, // the workspace itself: a directory
		{"sub\\win.txt", "/workspace/sub/win.txt", fs.ws + "/sub/win.txt", false},
		{"/tmp/t.txt", "/tmp/t.txt", fs.tmp + "/t.txt", false},
		{"/outputs/o.txt", "/mnt/user-data/outputs/o.txt", fs.outputs + "/o.txt", false},
		{"totmp/via-link.txt", "/tmp/via-link.txt", fs.tmp + "/via-link.txt", false},
		{"sub/fileref", "/workspace/file", fs.ws + "/file", true},
	}
	for _, tt := range tests {
		content := "héllo " + tt.path
		if tt.wantVirt == "" {
			status, body := fs.post(t, "/file-create", api.FileCreateRequest{Path: tt.path, Content: content})
			wantError(t, "file-create "+tt.path, status, body, 400, "Path is a directory")
			continue
		}
		got := postOK[api.FileCreateResult](t, fs, "/file-create", api.FileCreateRequest{Path: tt.path, Content: content})
		want := api.FileCreateResult{Path: tt.wantVirt, Size: int64(len(content)), Created: !tt.overwrite}
		if got != want {
			t.Errorf("file-create %q = %+v, want %+v", tt.path, got, want)
		}
		if s := readFile(t, tt.wantHost); s != content {
			t.Errorf("file-create %q wrote %q, want %q", tt.path, s, content)
		}
	}
	t.Run("overwrite keeps the mode", func(t *testing.T) {
		writeFile(t, fs.ws+"/run.sh", "old", 0o750)
		if got := postOK[api.FileCreateResult](t, fs, "/file-create", api.FileCreateRequest{Path: "run.sh", Content: "new"}); got.Created {
			t.Errorf("overwrite of run.sh = %+v, want created false", got)
		}
		if fi, err := os.Stat(fs.ws + "/run.sh"); err != nil || fi.Mode().Perm() != 0o750 || readFile(t, fs.ws+"/run.sh") != "new" {
			t.Errorf("overwritten run.sh: %v %v, want mode 0750 and content new", fi.Mode(), err)
		}
	})
	// No path is refused as such: before, it was the workspace, "Path is
	// a directory: " naming nothing.
	t.Run("no path", func(t *testing.T) {
		status, body := fs.post(t, "/file-create", api.FileCreateRequest{Content: "x"})
		wantError(t, "file-create without a path", status, body, 422, "path must not be empty")
		status, body = fs.post(t, "/str-replace", api.StrReplaceRequest{OldStr: "x", NewStr: "y"})
		wantError(t, "str-replace without a path", status, body, 422, "path must not be empty")
	})
	// A trailing slash names a directory, as open(2) reads it: before, it
	// was dropped, and "newdir/" wrote a file newdir.
	t.Run("trailing slash", func(t *testing.T) {
		writeFile(t, fs.ws+"/plain.txt", "x", 0o644)
		for _, p := range []string{"newdir/", "newdir\\", "plain.txt/"} {
			status, body := fs.post(t, "/file-create", api.FileCreateRequest{Path: p, Content: "y"})
			wantError(t, "file-create "+p, status, body, 400, "a file's name cannot end in /")
			status, body = fs.post(t, "/str-replace", api.StrReplaceRequest{Path: p, OldStr: "x", NewStr: "y"})
			wantError(t, "str-replace "+p, status, body, 400, "a file's name cannot end in /")
			status, body = call(t, http.MethodPut, fs.url+"/files/raw?path="+url.QueryEscape(p), authHeader, "y")
			wantError(t, "PUT raw "+p, status, body, 400, "a file's name cannot end in /")
		}
		if _, err := os.Lstat(fs.ws + "/newdir"); !os.IsNotExist(err) {
			t.Errorf("newdir after the refused writes: %v, want none", err)
		}
		if s := readFile(t, fs.ws+"/plain.txt"); s != "x" {
			t.Errorf("plain.txt = %q after the refused writes, want x", s)
		}
		status, body := fs.post(t, "/file-create", api.FileCreateRequest{Path: "/tmp/", Content: "y"})
		wantError(t, "file-create /tmp/", status, body, 400, "Path is a directory")
	})
	t.Run("too large", func(t *testing.T) {
		status, body := fs.post(t, "/file-create", api.FileCreateRequest{Path: "big", Content: strings.Repeat("x", api.MaxFileContent+1)})
		wantError(t, "file-create of 10 MiB + 1", status, body, 422, "limit is 10 MiB")
	})
}

// containmentCases are the reference's conformance cases for paths that
// lead out of the roots, by name and through planted symlinks.
func containmentCases(tr tree) []string {
	return []string{
		"../outside/secret.txt", "../../etc/passwd", "/etc/passwd", "/etc", "/mnt/not-a-root.md",
		"etc/passwd", "root/etc/passwd", "outside/secret.txt", "outside/new.txt", "secret",
		"up/outside/secret.txt", "sub/escape/secret.txt", "sub/hop/etc/hosts", "dangle", "dangle-in", "/uploads/../../x",
	}
}

// TestContainment runs every path that escapes the roots against every
// route that takes a path, and checks that nothing outside changed.
func TestContainment(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	for _, p := range containmentCases(fs.tree) {
		want := "Invalid path outside allowed roots: " + p
		if p == "dangle-in" {
			want = "dangling symlink"
		}
		q := "?path=" + url.QueryEscape(p)
		routes := []struct {
			name   string
			status int
			body   []byte
		}{}
		add := func(name string, status int, body []byte) {
			routes = append(routes, struct {
				name   string
				status int
				body   []byte
			}{name, status, body})
		}
		st, b := fs.post(t, "/view", api.ViewRequest{Path: p})
		add("view", st, b)
		st, b = fs.post(t, "/file-create", api.FileCreateRequest{Path: p, Content: "pwned"})
		add("file-create", st, b)
		st, b = fs.post(t, "/str-replace", api.StrReplaceRequest{Path: p, OldStr: "secret", NewStr: "pwned"})
		add("str-replace", st, b)
		st, b = fs.post(t, "/ls", api.LsRequest{Path: p})
		add("ls", st, b)
		st, b = fs.post(t, "/glob", api.GlobRequest{Path: p, Pattern: "*"})
		add("glob", st, b)
		st, b = fs.post(t, "/grep", api.GrepRequest{Path: p, Pattern: "secret"})
		add("grep", st, b)
		st, b = fs.post(t, "/watch", api.WatchRequest{Path: p, TimeoutSeconds: 0.1})
		add("watch", st, b)
		st, b = call(t, http.MethodGet, fs.url+"/files/raw"+q, authHeader, "")
		add("raw get", st, b)
		st, b = call(t, http.MethodPut, fs.url+"/files/raw"+q, authHeader, "pwned")
		add("raw put", st, b)
		st, b = call(t, http.MethodGet, fs.url+"/files/archive"+q, authHeader, "")
		add("archive get", st, b)
		st, b = call(t, http.MethodPost, fs.url+"/files/archive"+q, authHeader, string(tarOf(t, tarEntry{name: "x", body: "pwned"})))
		add("archive put", st, b)
		for _, r := range routes {
			wantError(t, r.name+" "+p, r.status, r.body, 400, want)
		}
	}
	if s := readFile(t, fs.outside+"/secret.txt"); s != "secret\n" {
		t.Errorf("secret.txt = %q after the attempts", s)
	}
	if des, _ := os.ReadDir(fs.outside); len(des) != 1 {
		t.Errorf("outside holds %d entries after the attempts, want 1", len(des))
	}
}

func TestReadOnlyRoots(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	for _, p := range []string{"/uploads/in.txt", "/mnt/user-data/uploads/new.txt", "/skills/s/SKILL.md", "toskills/s/x"} {
		st, b := fs.post(t, "/file-create", api.FileCreateRequest{Path: p, Content: "x"})
		wantError(t, "file-create "+p, st, b, 403, "Cannot write to read-only path: "+p)
		// Not an auth failure: the CLI exits 4 "check the API key" on forbidden.
		if e := decodeError(t, b); e.Code != api.CodePermissionDenied || e.Hint == "" {
			t.Errorf("file-create %s: code %q hint %q, want %q with a hint", p, e.Code, e.Hint, api.CodePermissionDenied)
		}
		st, b = fs.post(t, "/str-replace", api.StrReplaceRequest{Path: p, OldStr: "u", NewStr: "x"})
		wantError(t, "str-replace "+p, st, b, 403, "Cannot edit read-only path: "+p)
		st, b = call(t, http.MethodPut, fs.url+"/files/raw?path="+url.QueryEscape(p), authHeader, "x")
		wantError(t, "raw put "+p, st, b, 403, "Cannot write to read-only path: "+p)
	}
	st, b := call(t, http.MethodPost, fs.url+"/files/archive?path=/skills", authHeader, string(tarOf(t, tarEntry{name: "x", body: "x"})))
	wantError(t, "archive into skills", st, b, 403, "Cannot write to read-only path: /skills")
	// Reading them is fine.
	if got := postOK[api.ViewResult](t, fs, "/view", api.ViewRequest{Path: "/uploads/in.txt"}); got.Content != "uploaded\n" {
		t.Errorf("view /uploads/in.txt = %+v", got)
	}
}

func TestView(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{Limits: FileLimits{ViewMaxFile: 300 << 10}})
	writeFile(t, fs.ws+"/five.txt", "one\ntwo\nthree\nfour\nfive\n", 0o644)
	writeFile(t, fs.ws+"/nonl.txt", "a\nb", 0o644)
	writeFile(t, fs.ws+"/empty.txt", "", 0o644)
	writeFile(t, fs.ws+"/big.txt", strings.Repeat("é", 60<<10), 0o644) // 120 KiB of 2-byte runes
	writeFile(t, fs.ws+"/bin", "\xff\xfe\x00binary", 0o644)
	writeFile(t, fs.ws+"/d/x", "", 0o644)
	writeFile(t, fs.ws+"/d/a", "", 0o644)
	if err := os.Truncate(fs.ws+"/empty.txt", 0); err != nil {
		t.Fatal(err)
	}
	huge := fs.ws + "/huge.txt"
	writeFile(t, huge, "", 0o644)
	if err := os.Truncate(huge, 300<<10+1); err != nil { // sparse: past the configured cap
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fs.ws+"/fifo", 0o644); err != nil {
		t.Fatal(err)
	}
	bigWant := strings.Repeat("é", api.MaxViewOutput/2) + truncatedMark
	tests := []struct {
		name string
		req  api.ViewRequest
		want api.ViewResult
	}{
		{"whole file", api.ViewRequest{Path: "five.txt"}, api.ViewResult{Content: "one\ntwo\nthree\nfour\nfive\n", Lines: 5}},
		{"range", api.ViewRequest{Path: "five.txt", ViewRange: []int{2, 3}}, api.ViewResult{Content: "two\nthree", Lines: 5}},
		{"range to -1", api.ViewRequest{Path: "five.txt", ViewRange: []int{4, -1}}, api.ViewResult{Content: "four\nfive", Lines: 5}},
		{"range past the end", api.ViewRequest{Path: "five.txt", ViewRange: []int{5, 99}}, api.ViewResult{Content: "five", Lines: 5}},
		{"range from 0", api.ViewRequest{Path: "five.txt", ViewRange: []int{0, 1}}, api.ViewResult{Content: "one", Lines: 5}},
		{"empty range", api.ViewRequest{Path: "five.txt", ViewRange: []int{4, 2}}, api.ViewResult{Content: "", Lines: 5}},
		{"three numbers ignored", api.ViewRequest{Path: "five.txt", ViewRange: []int{1, 2, 3}}, api.ViewResult{Content: "one\ntwo\nthree\nfour\nfive\n", Lines: 5}},
		{"no final newline", api.ViewRequest{Path: "nonl.txt"}, api.ViewResult{Content: "a\nb", Lines: 2}},
		{"empty file", api.ViewRequest{Path: "empty.txt"}, api.ViewResult{Content: "", Lines: 0}},
		{"truncated on a rune", api.ViewRequest{Path: "big.txt"}, api.ViewResult{Content: bigWant, Lines: 1}},
		{"directory", api.ViewRequest{Path: "d"}, api.ViewResult{IsDirectory: true, Entries: []string{"a", "x"}}},
		{"alias", api.ViewRequest{Path: "/skills/s/SKILL.md"}, api.ViewResult{Content: "skill\n", Lines: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := postOK[api.ViewResult](t, fs, "/view", tt.req)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("view %+v (-want +got):\n%s", tt.req, diff)
			}
		})
	}
	errs := []struct {
		path       string
		wantStatus int
		wantMsg    string
	}{
		{"missing.txt", 404, "File not found: missing.txt"},
		{"bin", 422, "not UTF-8 text"},
		{"huge.txt", 422, "too large to view"},
		{"fifo", 400, "Not a regular file"},
	}
	for _, tt := range errs {
		st, b := fs.post(t, "/view", api.ViewRequest{Path: tt.path})
		wantError(t, "view "+tt.path, st, b, tt.wantStatus, tt.wantMsg)
	}
	// The hints name the API's route, which a client calls, not the
	// sidecar's own /files/raw behind it.
	_, b := fs.post(t, "/view", api.ViewRequest{Path: "bin"})
	if e, want := decodeError(t, b), "download it with GET /v1/sandboxes/{id}/files/raw"; !strings.Contains(e.Hint, want) {
		t.Errorf("view bin: hint %q, want it to say %q", e.Hint, want)
	}
	if h, want := tooLarge("File is too large").Hint, "move large files with PUT and GET /v1/sandboxes/{id}/files/raw"; !strings.Contains(h, want) {
		t.Errorf("a file too large: hint %q, want it to say %q", h, want)
	}
}

func TestStrReplace(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	tests := []struct {
		name       string
		content    string
		req        api.StrReplaceRequest
		want       api.StrReplaceResult
		wantFile   string
		wantStatus int // 0 means 200
		wantMsg    string
	}{
		{"once", "a foo b", api.StrReplaceRequest{OldStr: "foo", NewStr: "bar"}, api.StrReplaceResult{Replaced: true, Occurrences: 1}, "a bar b", 0, ""},
		{"none", "a foo b", api.StrReplaceRequest{OldStr: "zzz", NewStr: "bar"}, api.StrReplaceResult{}, "a foo b", 0, ""},
		{"many", "foo foo foo", api.StrReplaceRequest{OldStr: "foo", NewStr: "bar"}, api.StrReplaceResult{}, "foo foo foo", 400, "old_str appears 3 times. Must appear exactly once."},
		{"replace all", "foo foo foo", api.StrReplaceRequest{OldStr: "foo", NewStr: "bar", ReplaceAll: true}, api.StrReplaceResult{Replaced: true, Occurrences: 3}, "bar bar bar", 0, ""},
		{"replace all once", "foo", api.StrReplaceRequest{OldStr: "foo", NewStr: "", ReplaceAll: true}, api.StrReplaceResult{Replaced: true, Occurrences: 1}, "", 0, ""},
		{"multi-line", "x\n  y\nz\n", api.StrReplaceRequest{OldStr: "x\n  y\n", NewStr: "w\n"}, api.StrReplaceResult{Replaced: true, Occurrences: 1}, "w\nz\n", 0, ""},
		{"empty old_str", "foo", api.StrReplaceRequest{OldStr: "", NewStr: "x"}, api.StrReplaceResult{}, "foo", 422, "old_str must not be empty"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "f" + string(rune('a'+i)) + ".sh"
			host := fs.ws + "/" + name
			writeFile(t, host, tt.content, 0o751)
			before, _ := os.Stat(host)
			tt.req.Path = name
			st, b := fs.post(t, "/str-replace", tt.req)
			if tt.wantStatus != 0 {
				wantError(t, "str-replace", st, b, tt.wantStatus, tt.wantMsg)
			} else {
				var got api.StrReplaceResult
				if err := json.Unmarshal(b, &got); st != 200 || err != nil {
					t.Fatalf("str-replace = %d %s", st, b)
				}
				tt.want.Path = "/workspace/" + name
				if got != tt.want {
					t.Errorf("str-replace = %+v, want %+v", got, tt.want)
				}
			}
			if s := readFile(t, host); s != tt.wantFile {
				t.Errorf("file = %q, want %q", s, tt.wantFile)
			}
			after, err := os.Stat(host)
			if err != nil || after.Mode() != before.Mode() {
				t.Errorf("mode %v after, %v before (%v)", after.Mode(), before.Mode(), err)
			}
			// Atomic: an edit is a new inode renamed into place.
			if edited := tt.want.Replaced; edited == os.SameFile(before, after) {
				t.Errorf("SameFile(before, after) = %v for an edit that replaced %v", os.SameFile(before, after), edited)
			}
		})
	}
	if des, _ := filepath.Glob(fs.ws + "/.boxkite-*"); len(des) != 0 {
		t.Errorf("temp files left behind: %v", des)
	}
	huge := fs.ws + "/huge"
	writeFile(t, huge, "", 0o644)
	if err := os.Truncate(huge, api.MaxFileContent+1); err != nil {
		t.Fatal(err)
	}
	st, b := fs.post(t, "/str-replace", api.StrReplaceRequest{Path: "huge", OldStr: "x"})
	wantError(t, "str-replace of a 10 MiB + 1 file", st, b, 422, "too large to edit")
	st, b = fs.post(t, "/str-replace", api.StrReplaceRequest{Path: "nope", OldStr: "x"})
	wantError(t, "str-replace of a missing file", st, b, 404, "File not found: nope")
	st, b = fs.post(t, "/str-replace", api.StrReplaceRequest{Path: "sub", OldStr: "x"})
	wantError(t, "str-replace of a directory", st, b, 400, "Path is a directory")
}

func TestPresentFiles(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	writeFile(t, fs.ws+"/report.md", "# report\n", 0o644)
	writeFile(t, fs.ws+"/data/blob", "\x89PNG\r\n\x1a\n....", 0o644)
	writeFile(t, fs.outputs+"/sub/already.json", "{}", 0o644)
	got := postOK[api.PresentFilesResult](t, fs, "/present-files", api.PresentFilesRequest{
		Filepaths: []string{"report.md", "data/blob", "/outputs/sub/already.json", "missing", "sub", "/etc/passwd", "secret"},
	})
	want := api.PresentFilesResult{
		Files: []api.PresentedFile{
			{FilePath: "/mnt/user-data/outputs/report.md", StorageKey: "outputs/report.md", Size: 9, ContentType: "text/markdown; charset=utf-8"},
			{FilePath: "/mnt/user-data/outputs/blob", StorageKey: "outputs/blob", Size: 12, ContentType: "image/png"},
			{FilePath: "/mnt/user-data/outputs/sub/already.json", StorageKey: "outputs/sub/already.json", Size: 2, ContentType: "application/json"},
		},
		CopyOperations: []string{
			"/workspace/report.md -> /mnt/user-data/outputs/report.md",
			"/workspace/data/blob -> /mnt/user-data/outputs/blob",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("present-files (-want +got):\n%s", diff)
	}
	if s := readFile(t, fs.outputs+"/report.md"); s != "# report\n" {
		t.Errorf("copied report.md = %q", s)
	}
}

func TestLs(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	writeFile(t, fs.ws+"/sub/deep/f.txt", "12345", 0o644)
	if err := os.Mkdir(fs.ws+"/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	paths := func(entries []api.LsEntry) []string {
		var ps []string
		for _, e := range entries {
			ps = append(ps, e.Path)
		}
		return ps
	}
	tests := []struct {
		path string
		want []string
	}{
		// Planted links out of the roots (root, up, etc, outside, secret, sub/...) and dangling or looping ones are skipped.
		{"/", []string{"/workspace/empty/", "/workspace/file", "/workspace/rel/", "/workspace/sub/", "/workspace/sub2/", "/workspace/toskills/", "/workspace/totmp/"}},
		{"sub", []string{"/workspace/sub/deep/", "/workspace/sub/fileref", "/workspace/sub/in/"}},
		{"/mnt", []string{"/mnt/skills/", "/mnt/user-data/"}},
		{"/mnt/user-data", []string{"/mnt/user-data/outputs/", "/mnt/user-data/uploads/"}},
		{"/uploads", []string{"/mnt/user-data/uploads/in.txt"}},
		{"empty", nil},
	}
	for _, tt := range tests {
		got := postOK[api.LsResult](t, fs, "/ls", api.LsRequest{Path: tt.path})
		if got.Entries == nil {
			t.Errorf("ls %q: entries is null, want a list", tt.path)
		}
		if diff := cmp.Diff(tt.want, paths(got.Entries), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ls %q (-want +got):\n%s", tt.path, diff)
		}
	}
	got := postOK[api.LsResult](t, fs, "/ls", api.LsRequest{Path: "sub/deep"})
	if len(got.Entries) != 1 || got.Entries[0].Size != 5 || got.Entries[0].IsDir || got.Entries[0].ModifiedAt.IsZero() {
		t.Errorf("ls sub/deep = %+v, want f.txt with size 5 and a time", got.Entries)
	}
	// A missing directory is not found, not an empty list: the answer
	// tells a typo from an empty directory.
	for _, p := range []string{"nope", "sub/nope", "/tmp/nope"} {
		st, b := fs.post(t, "/ls", api.LsRequest{Path: p})
		wantError(t, "ls "+p, st, b, http.StatusNotFound, "Directory not found: "+p)
		if e := decodeError(t, b); e.Code != api.CodeNotFound || e.Hint == "" {
			t.Errorf("ls %s: code %q hint %q, want %q with a hint", p, e.Code, e.Hint, api.CodeNotFound)
		}
	}
	// A file is not a directory: ls refuses it, as it refuses a missing
	// path, so a caller tells a file from a directory holding one entry.
	// Through a symlink (sub/fileref -> ../file) too.
	for _, p := range []string{"sub/deep/f.txt", "/workspace/file", "sub/fileref"} {
		st, b := fs.post(t, "/ls", api.LsRequest{Path: p})
		wantError(t, "ls "+p, st, b, http.StatusBadRequest, "Not a directory: "+p)
		if e := decodeError(t, b); e.Code != api.CodeNotADirectory || !strings.Contains(e.Hint, "files view") {
			t.Errorf("ls %s: code %q hint %q, want %q with a hint naming files view", p, e.Code, e.Hint, api.CodeNotADirectory)
		}
	}
}

// sandboxOwned gives the writable roots of fs to the sandbox user, as the
// local driver does, and lets it reach them: t.TempDir and its parent are
// 0700.
func sandboxOwned(t *testing.T, fs fileServer, uid, gid int) {
	t.Helper()
	for _, d := range []string{filepath.Dir(fs.base), fs.base, fs.base + "/mnt", fs.base + "/mnt/user-data"} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range []string{fs.ws, fs.tmp, fs.outputs} {
		err := filepath.WalkDir(root, func(p string, _ iofs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFileWorkAsTheSandboxUser checks that file routes act with the
// sandbox user's rights: what they create is its own, and what it may not
// read or write is refused with 403 permission_denied. It needs root, as
// CI has, to switch ids.
func TestFileWorkAsTheSandboxUser(t *testing.T) {
	t.Parallel()
	needRoot(t, "acting as another user")
	fs := newFileServer(t, Options{RunAs: &RunAs{UID: 1001, GID: 1002}})
	sandboxOwned(t, fs, 1001, 1002)
	postOK[api.FileCreateResult](t, fs, "/file-create", api.FileCreateRequest{Path: "new/dir/f.txt", Content: "x"})
	if st, b := call(t, http.MethodPut, fs.url+"/files/raw?path=raw.bin", authHeader, "x"); st != http.StatusOK {
		t.Fatalf("raw put = %d %s", st, b)
	}
	if st, b := call(t, http.MethodPost, fs.url+"/files/archive?path=arc", authHeader, string(tarOf(t, tarEntry{name: "d/e", body: "x"}))); st != http.StatusOK {
		t.Fatalf("archive upload = %d %s", st, b)
	}
	for _, p := range []string{"new", "new/dir", "new/dir/f.txt", "raw.bin", "arc", "arc/d", "arc/d/e"} {
		if uid, gid := ownerOf(t, fs.ws+"/"+p); uid != 1001 || gid != 1002 {
			t.Errorf("%s owned by %d:%d, want 1001:1002", p, uid, gid)
		}
	}

	// Someone else's file the user may write: edited, and then the user's,
	// as after sed -i in a command.
	writeFile(t, fs.ws+"/shared", "foo", 0o666)
	chown(t, fs.ws+"/shared", 1234, 1235)
	postOK[api.StrReplaceResult](t, fs, "/str-replace", api.StrReplaceRequest{Path: "shared", OldStr: "foo", NewStr: "bar"})
	if uid, _ := ownerOf(t, fs.ws+"/shared"); uid != 1001 || readFile(t, fs.ws+"/shared") != "bar" {
		t.Errorf("edited shared file owned by %d with %q, want 1001 and bar", uid, readFile(t, fs.ws+"/shared"))
	}

	// What the user may not touch.
	writeFile(t, fs.ws+"/theirs", "foo", 0o644)
	chown(t, fs.ws+"/theirs", 0, 0)
	writeFile(t, fs.ws+"/private", "foo", 0o600)
	chown(t, fs.ws+"/private", 0, 0)
	writeFile(t, fs.ws+"/mine-ro", "foo", 0o444)
	chown(t, fs.ws+"/mine-ro", 1001, 1002)
	if err := os.Mkdir(fs.ws+"/locked", 0o755); err != nil {
		t.Fatal(err)
	}
	q := func(p string) string { return "?path=" + url.QueryEscape(p) }
	tar1 := string(tarOf(t, tarEntry{name: "x", body: "pwned"}))
	refused := []struct {
		name         string
		status       int
		body         []byte
		verb, target string
	}{}
	add := func(name, verb, target string, status int, body []byte) {
		refused = append(refused, struct {
			name         string
			status       int
			body         []byte
			verb, target string
		}{name, status, body, verb, target})
	}
	for _, p := range []string{"theirs", "mine-ro"} {
		st, b := fs.post(t, "/file-create", api.FileCreateRequest{Path: p, Content: "pwned"})
		add("file-create "+p, "write to", p, st, b)
		st, b = fs.post(t, "/str-replace", api.StrReplaceRequest{Path: p, OldStr: "foo", NewStr: "pwned"})
		add("str-replace "+p, "write to", p, st, b)
		st, b = call(t, http.MethodPut, fs.url+"/files/raw"+q(p), authHeader, "pwned")
		add("raw put "+p, "write to", p, st, b)
	}
	st, b := fs.post(t, "/view", api.ViewRequest{Path: "private"})
	add("view private", "read", "private", st, b)
	st, b = call(t, http.MethodGet, fs.url+"/files/raw"+q("private"), authHeader, "")
	add("raw get private", "read", "private", st, b)
	st, b = fs.post(t, "/file-create", api.FileCreateRequest{Path: "locked/new", Content: "pwned"})
	add("file-create in a root-owned directory", "write to", "locked/new", st, b)
	st, b = call(t, http.MethodPost, fs.url+"/files/archive"+q("locked"), authHeader, tar1)
	add("archive into a root-owned directory", "write to", "x", st, b)
	for _, r := range refused {
		if r.status != http.StatusForbidden {
			t.Errorf("%s = %d %s, want 403", r.name, r.status, r.body)
			continue
		}
		e := decodeError(t, r.body)
		if e.Code != api.CodePermissionDenied || e.Hint == "" || !strings.Contains(e.Message, "may not "+r.verb+" "+r.target) {
			t.Errorf("%s: %+v, want code permission_denied, a hint and a message naming %q", r.name, e, r.verb+" "+r.target)
		}
	}
	for _, p := range []string{"theirs", "mine-ro", "private"} {
		if got := readFile(t, fs.ws+"/"+p); got != "foo" {
			t.Errorf("%s = %q after the refusals, want foo", p, got)
		}
	}
	if des, _ := os.ReadDir(fs.ws + "/locked"); len(des) != 0 {
		t.Errorf("the root-owned directory holds %d entries", len(des))
	}
}

func ownerOf(t *testing.T, p string) (uid, gid int) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

func chown(t *testing.T, p string, uid, gid int) {
	t.Helper()
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// TestNoDescriptorLeak runs every file route, on paths that work and on
// paths that are refused, many times and checks that the sidecar holds
// no more descriptors than before: each request opens a root, a chain of
// directories and files, and must close them all.
func TestNoDescriptorLeak(t *testing.T) {
	fs := newFileServer(t, Options{})
	writeFile(t, fs.ws+"/d/f.txt", "foo\n", 0o644)
	archive := string(tarOf(t, tarEntry{name: "x/y", body: "z"}, tarEntry{name: "l", typ: tar.TypeSymlink, link: "x/y"}))
	round := func() {
		for _, p := range []string{"d/f.txt", "d", "sub/in", "totmp/n", "root/etc/passwd", "sub/escape/secret.txt", "dangle-in", "new/a/b"} {
			q := "?path=" + url.QueryEscape(p)
			fs.post(t, "/view", api.ViewRequest{Path: p})
			fs.post(t, "/file-create", api.FileCreateRequest{Path: p + "-c", Content: "c"})
			fs.post(t, "/str-replace", api.StrReplaceRequest{Path: p, OldStr: "foo", NewStr: "foo"})
			fs.post(t, "/ls", api.LsRequest{Path: p})
			fs.post(t, "/glob", api.GlobRequest{Path: p, Pattern: "*"})
			fs.post(t, "/grep", api.GrepRequest{Path: p, Pattern: "o"})
			fs.post(t, "/watch", api.WatchRequest{Path: p, TimeoutSeconds: 0.1, Recursive: true})
			fs.post(t, "/present-files", api.PresentFilesRequest{Filepaths: []string{p}})
			call(t, http.MethodGet, fs.url+"/files/raw"+q, authHeader, "")
			call(t, http.MethodPut, fs.url+"/files/raw"+q+"-r", authHeader, "r")
			call(t, http.MethodGet, fs.url+"/files/archive"+q, authHeader, "")
			call(t, http.MethodPost, fs.url+"/files/archive"+q+"-a", authHeader, archive)
		}
	}
	round() // connections, roots' real paths and the like, once
	fds := func() int {
		des, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	before := fds()
	for range 5 {
		round()
	}
	if after := fds(); after > before+8 { // a few connections may come and go; a leak is hundreds
		t.Errorf("%d descriptors open after 5 rounds of every route, %d before", after, before)
	}
}

// TestNameTooLong: a name longer than the filesystem takes is refused
// with a hint about its length; it had the hint about dangling symlinks
// and files in the way, which sent the user looking for those.
func TestNameTooLong(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	status, body := fs.post(t, "/file-create", api.FileCreateRequest{Path: strings.Repeat("a", 300), Content: "x"})
	wantError(t, "file-create of a 300-byte name", status, body, 400, "file name too long")
	if e := decodeError(t, body); !strings.Contains(e.Hint, "255 bytes") {
		t.Errorf("hint %q, want one about the name's length", e.Hint)
	}
}

// Concurrent str-replaces of one file, each of its own line, all stay:
// each edit reads what the others wrote. Before, they read the same old
// content and the last rename won, losing edits that had answered
// replaced (10 at once lost 3 in a sandbox).
func TestStrReplaceConcurrent(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	const n = 16
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, "line %d: old\n", i)
	}
	writeFile(t, fs.ws+"/shared.txt", lines.String(), 0o644)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			st, b := fs.post(t, "/str-replace", api.StrReplaceRequest{
				Path: "shared.txt", OldStr: fmt.Sprintf("line %d: old\n", i), NewStr: fmt.Sprintf("line %d: new\n", i),
			})
			var got api.StrReplaceResult
			if err := json.Unmarshal(b, &got); st != http.StatusOK || err != nil || !got.Replaced {
				t.Errorf("str-replace of line %d = %d %s", i, st, b)
			}
		})
	}
	wg.Wait()
	if got, want := readFile(t, fs.ws+"/shared.txt"), strings.ReplaceAll(lines.String(), ": old", ": new"); got != want {
		t.Errorf("after %d concurrent edits the file is\n%s\nwant\n%s", n, got, want)
	}
}
