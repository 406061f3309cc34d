package envd

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
)

// TestMkdirScript: the make_dir script through /bin/sh. An existing
// directory (or a symlink to one) is exitExists, which MakeDir answers
// already_exists (the SDK's false); a file or another non-directory at
// the path is exitNotDir (invalid_argument): it was exitExists, so the
// SDK's makeDir of a file's path returned false, as if the directory were
// there.
func TestMkdirScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, make := range map[string]func(string) error{
		"dir":      func(p string) error { return os.Mkdir(p, 0o755) },
		"file":     func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"dirlink":  func(p string) error { return os.Symlink(dir, p) },
		"dangling": func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) },
	} {
		if err := make(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path string
		want int
	}{
		{"new/deep", 0},
		{"dir", exitExists},
		{"dirlink", exitExists},
		{"file", exitNotDir},
		{"dangling", exitNotDir},
	}
	for _, tt := range tests {
		cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(filepath.Join(dir, tt.path))+"\n"+mkdirScript)
		out, err := cmd.Output()
		code := 0
		if exit := new(exec.ExitError); errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.want {
			t.Errorf("make_dir %s: exit %d, want %d", tt.path, code, tt.want)
		}
		if code == 0 {
			if e, err := oneEntry(Home, string(out)); err != nil || e.GetName() != "deep" {
				t.Errorf("make_dir %s: entry %v, %v; want deep", tt.path, e, err)
			}
		}
	}
}

// TestBackslashPathRefused: a read or a write of a path with a backslash
// is refused with 400 (the SDK's InvalidArgumentError) before the sidecar
// is asked: its file routes take a backslash for a slash, so the file was
// written elsewhere than the answer said, and a read read another file.
func TestBackslashPathRefused(t *testing.T) {
	t.Parallel()
	h := &Handler{}
	for _, tt := range []struct {
		method string
		serve  http.HandlerFunc
	}{
		{http.MethodGet, h.download},
		{http.MethodPost, h.upload},
	} {
		r := httptest.NewRequest(tt.method, "/files?path="+url.QueryEscape(`dir\sub/a.txt`), strings.NewReader("x"))
		r.Header.Set("Content-Type", "application/octet-stream")
		w := httptest.NewRecorder()
		tt.serve(w, r)
		var body struct {
			Code    int
			Message string
		}
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != http.StatusBadRequest || body.Code != http.StatusBadRequest || !strings.Contains(body.Message, `'/home/user/dir\sub/a.txt' has a backslash`) {
			t.Errorf("%s of a path with a backslash: %d %s, want 400 naming the path", tt.method, w.Code, w.Body)
		}
	}
}

// TestScriptErrorThroughAFile runs the make_dir and move scripts on paths
// through a file and the list script on a file: each is
// invalid_argument, which was internal for make_dir and move. A
// read-only filesystem is permission_denied (its message as rm writes it:
// the tests run as root, whom no mode stops).
func TestScriptErrorThroughAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file, src := filepath.Join(dir, "file"), filepath.Join(dir, "src")
	for _, p := range []string{file, src} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, script string
		args         []string
	}{
		{"make_dir", mkdirScript, []string{filepath.Join(file, "sub")}},
		{"move", moveScript, []string{src, filepath.Join(file, "sub", "dst")}},
		{"ls", listScript, []string{file, "1"}},
	} {
		words := []string{"set", "--"}
		for _, a := range tt.args {
			words = append(words, shellQuote(a))
		}
		cmd := exec.Command("/bin/sh", "-c", strings.Join(words, " ")+"\n"+tt.script)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		exit := new(exec.ExitError)
		if !errors.As(err, &exit) {
			t.Fatalf("%s: %v, want a failure", tt.name, err)
		}
		got := scriptError(tt.name, tt.args[0], exit.ExitCode(), strings.TrimSpace(stderr.String()))
		if connect.CodeOf(got) != connect.CodeInvalidArgument {
			t.Errorf("%s through a file: %v, want invalid_argument", tt.name, got)
		}
	}
	readOnly := scriptError("remove", "/etc/hostname", 1, "rm: cannot remove '/etc/hostname': Read-only file system")
	if connect.CodeOf(readOnly) != connect.CodePermissionDenied {
		t.Errorf("read-only filesystem: %v, want permission_denied", readOnly)
	}
}

// TestListDirOfAFile: ListDir of a path that is not a directory answers
// as envd's does (filesystem/dir.go: followSymlink, then
// checkIfDirectory): invalid_argument "path is not a directory: P", P the
// path with its symlinks resolved and named as the caller named the path
// (under /home/user when asked there); a symlink that leads nowhere is
// not_found. It answered "path 'P' is not a directory", naming the path
// as asked, and a dangling symlink invalid_argument. A path that is not
// there is not_found with envd's message, "path not found: lstat P: no
// such file or directory", P the first part that is not there, symlinks
// before it resolved (filepath.EvalSymlinks' error); it said "path 'P'
// does not exist".
func TestListDirOfAFile(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"lf": "sub/f.txt", "dangling": "nowhere", "ld": "sub", "deep": "sub/gone/further"} {
		if err := os.Symlink(to, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path     string // as the caller names it (absPath's input)
		wantCode connect.Code
		wantMsg  string
	}{
		{"sub/f.txt", connect.CodeInvalidArgument, "path is not a directory: /home/user/sub/f.txt"},
		{"/home/user/lf", connect.CodeInvalidArgument, "path is not a directory: /home/user/sub/f.txt"},
		{"/workspace/lf", connect.CodeInvalidArgument, "path is not a directory: /workspace/sub/f.txt"},
		{"/workspace/sub/../sub/f.txt", connect.CodeInvalidArgument, "path is not a directory: /workspace/sub/f.txt"},
		{"dangling", connect.CodeNotFound, "path not found: lstat /home/user/nowhere: no such file or directory"},
		{"nope", connect.CodeNotFound, "path not found: lstat /home/user/nope: no such file or directory"},
		{"nope/deeper/still", connect.CodeNotFound, "path not found: lstat /home/user/nope: no such file or directory"},
		{"/workspace/nope/deeper", connect.CodeNotFound, "path not found: lstat /workspace/nope: no such file or directory"},
		{"ld/gone/x", connect.CodeNotFound, "path not found: lstat /home/user/sub/gone: no such file or directory"},
		{"deep", connect.CodeNotFound, "path not found: lstat /home/user/sub/gone: no such file or directory"},
		{"sub/f.txt/x", connect.CodeNotFound, "path not found: lstat /home/user/sub/f.txt/x: not a directory"},
		{"lf/x", connect.CodeNotFound, "path not found: lstat /home/user/sub/f.txt/x: not a directory"},
		{"/workspace/a: b/c", connect.CodeNotFound, "path not found: lstat /workspace/a: b: no such file or directory"},
	}
	for _, tt := range tests {
		p := absPath(tt.path)
		cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(inWorkspace(inSandbox(p)))+" 1\n"+listScript)
		cmd.Dir = ws
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		exit := new(exec.ExitError)
		if !errors.As(err, &exit) {
			t.Fatalf("ls %s: %v, want a failure", tt.path, err)
		}
		got := scriptError("ls", p, exit.ExitCode(), stderr.String())
		if connect.CodeOf(got) != tt.wantCode {
			t.Errorf("ls %s: %v, want %v", tt.path, got, tt.wantCode)
		}
		var ce *connect.Error
		if tt.wantMsg != "" && (!errors.As(got, &ce) || ce.Message() != tt.wantMsg) {
			t.Errorf("ls %s: message %v, want %q", tt.path, got, tt.wantMsg)
		}
	}
}

// TestStatMissing: Stat of a path that is not there is not_found with
// envd's message (entryInfo: os.Lstat of the path), "file not found:
// lstat P: no such file or directory", P the path as the caller named it;
// it said "path 'P' does not exist".
func TestStatMissing(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, tt := range []struct{ path, want string }{
		{"nope", "file not found: lstat /home/user/nope: no such file or directory"},
		{"nope/deeper", "file not found: lstat /home/user/nope/deeper: no such file or directory"},
		{"/workspace/nope", "file not found: lstat /workspace/nope: no such file or directory"},
	} {
		p := absPath(tt.path)
		cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(inWorkspace(inSandbox(p)))+"\n"+statScript)
		cmd.Dir = ws
		var stderr strings.Builder
		cmd.Stderr = &stderr
		exit := new(exec.ExitError)
		if err := cmd.Run(); !errors.As(err, &exit) {
			t.Fatalf("stat %s: %v, want a failure", tt.path, err)
		}
		got := scriptError("stat", p, exit.ExitCode(), stderr.String())
		var ce *connect.Error
		if !errors.As(got, &ce) || ce.Code() != connect.CodeNotFound || ce.Message() != tt.want {
			t.Errorf("stat %s: %v, want not_found %q", tt.path, got, tt.want)
		}
	}
}
