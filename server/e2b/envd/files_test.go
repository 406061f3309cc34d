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

// TestScriptErrorThroughAFile runs the make_dir script on a path through
// a file and the list script on a file: each is invalid_argument, which
// was internal for make_dir. (A move's destination through a file is
// internal "path is a file: P", as envd's: TestMoveScriptErrors.) A
// read-only filesystem is permission_denied (its message as rm writes it:
// the tests run as root, whom no mode stops).
func TestScriptErrorThroughAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, script string
		args         []string
	}{
		{"make_dir", mkdirScript, []string{filepath.Join(file, "sub")}},
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

// TestMoveScriptErrors: the move script through /bin/sh, its failures
// answered as envd's Move answers them (filesystem/move.go: EnsureDirs of
// the destination's parent, then os.Rename), paths named as the caller
// named them. A source that is not there said "path 'P' does not exist"
// and made no parents; a destination that is a directory, empty, was
// replaced by a directory moved onto it (mv -T), and a file moved onto
// itself or a hard link of itself failed (mv refuses), where rename does
// nothing. Each case runs in a workspace of its own, and checks what is
// there after it.
func TestMoveScriptErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, dst string
		wantCode       connect.Code // 0: the move succeeds
		wantMsg        string
		there, gone    []string // paths (in the workspace) there, and not there, after the move
	}{
		{
			name: "missing source", src: "nope", dst: "made/sub/x",
			wantCode: connect.CodeNotFound, wantMsg: "source file not found: rename /home/user/nope /home/user/made/sub/x: no such file or directory",
			there: []string{"made/sub"}, gone: []string{"made/sub/x"}, // envd makes the parents first
		},
		{
			name: "missing source's directory", src: "/workspace/none/x", dst: "/workspace/y",
			wantCode: connect.CodeNotFound, wantMsg: "source file not found: rename /workspace/none/x /workspace/y: no such file or directory",
		},
		{
			name: "source through a file", src: "f.txt/x", dst: "y",
			wantCode: connect.CodeInternal, wantMsg: "error renaming: rename /home/user/f.txt/x /home/user/y: not a directory",
		},
		{
			name: "destination's parent a file", src: "a.txt", dst: "f.txt/sub/y",
			wantCode: connect.CodeInternal, wantMsg: "path is a file: /home/user/f.txt", there: []string{"a.txt"},
		},
		{
			name: "destination's parent a file, deeper", src: "/workspace/a.txt", dst: "/workspace/dir/g.txt/y",
			wantCode: connect.CodeInternal, wantMsg: "path is a file: /workspace/dir/g.txt", there: []string{"a.txt"},
		},
		{
			name: "destination's parent a link to a file", src: "a.txt", dst: "lf/y",
			wantCode: connect.CodeInternal, wantMsg: "path is a file: /home/user/lf", there: []string{"a.txt"},
		},
		{
			name: "file onto an empty directory", src: "a.txt", dst: "empty",
			wantCode: connect.CodeInternal, wantMsg: "error renaming: rename /home/user/a.txt /home/user/empty: file exists", there: []string{"a.txt", "empty"},
		},
		{
			name: "directory onto an empty directory", src: "dir", dst: "empty",
			wantCode: connect.CodeInternal, wantMsg: "error renaming: rename /home/user/dir /home/user/empty: file exists", there: []string{"dir/g.txt", "empty"},
		},
		{
			name: "directory onto itself", src: "dir", dst: "/home/user/dir",
			wantCode: connect.CodeInternal, wantMsg: "error renaming: rename /home/user/dir /home/user/dir: file exists", there: []string{"dir/g.txt"},
		},
		{
			name: "directory onto a file", src: "dir", dst: "f.txt",
			wantCode: connect.CodeInternal, wantMsg: "error renaming: rename /home/user/dir /home/user/f.txt: not a directory", there: []string{"dir/g.txt", "f.txt"},
		},
		{
			name: "directory below itself", src: "dir", dst: "dir/sub/in",
			wantCode: connect.CodeInternal, wantMsg: "error renaming: rename /home/user/dir /home/user/dir/sub/in: invalid argument", there: []string{"dir/g.txt"},
		},
		{name: "file onto a file", src: "a.txt", dst: "f.txt", there: []string{"f.txt"}, gone: []string{"a.txt"}},
		{name: "file onto itself", src: "a.txt", dst: "/workspace/a.txt", there: []string{"a.txt"}},
		{name: "file onto a hard link of itself", src: "a.txt", dst: "hard", there: []string{"a.txt", "hard"}},
		{name: "file onto a link to a directory", src: "a.txt", dst: "ld", there: []string{"ld", "dir/g.txt"}, gone: []string{"a.txt"}},
		{name: "dangling link", src: "dangling", dst: "new/moved", there: []string{"new"}, gone: []string{"dangling"}},
		{name: "directory to a new place", src: "dir", dst: "new/dir", there: []string{"new/dir/g.txt"}, gone: []string{"dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			for _, d := range []string{"dir", "empty"} {
				if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{"a.txt", "f.txt", "dir/g.txt"} {
				if err := os.WriteFile(filepath.Join(ws, f), []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for link, to := range map[string]string{"lf": "f.txt", "ld": "dir", "dangling": "nowhere"} {
				if err := os.Symlink(to, filepath.Join(ws, link)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Link(filepath.Join(ws, "a.txt"), filepath.Join(ws, "hard")); err != nil {
				t.Fatal(err)
			}
			src, dst := absPath(tt.src), absPath(tt.dst)
			cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(inWorkspace(inSandbox(src)))+" "+shellQuote(inWorkspace(inSandbox(dst)))+"\n"+moveScript)
			cmd.Dir = ws
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			exit := new(exec.ExitError)
			switch {
			case err == nil && tt.wantCode == 0:
				if e, err := oneEntry(dst, string(out)); err != nil || e.GetPath() != dst {
					t.Errorf("move %s %s: entry %v, %v; want %s", tt.src, tt.dst, e, err, dst)
				}
			case err == nil:
				t.Errorf("move %s %s succeeded, want %v %q", tt.src, tt.dst, tt.wantCode, tt.wantMsg)
			case !errors.As(err, &exit):
				t.Fatal(err)
			case tt.wantCode == 0:
				t.Errorf("move %s %s: exit %d: %s", tt.src, tt.dst, exit.ExitCode(), stderr.String())
			default:
				got := moveError(src, dst, exit.ExitCode(), stderr.String())
				var ce *connect.Error
				if !errors.As(got, &ce) || ce.Code() != tt.wantCode || ce.Message() != tt.wantMsg {
					t.Errorf("move %s %s: %v, want %v %q", tt.src, tt.dst, got, tt.wantCode, tt.wantMsg)
				}
			}
			for _, p := range tt.there {
				if _, err := os.Lstat(filepath.Join(ws, p)); err != nil {
					t.Errorf("after the move: %v", err)
				}
			}
			for _, p := range tt.gone {
				if _, err := os.Lstat(filepath.Join(ws, p)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("after the move, %s: %v, want not there", p, err)
				}
			}
		})
	}
}
