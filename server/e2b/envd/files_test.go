package envd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
