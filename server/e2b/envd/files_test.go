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
			if e, err := oneEntry(string(out)); err != nil || e.GetName() != "deep" {
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
		if w.Code != http.StatusBadRequest || body.Code != http.StatusBadRequest || !strings.Contains(body.Message, `'/workspace/dir\sub/a.txt' has a backslash`) {
			t.Errorf("%s of a path with a backslash: %d %s, want 400 naming the path", tt.method, w.Code, w.Body)
		}
	}
}
