package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// hostSandbox runs Exec with the host's /bin/sh and writes files on the
// host, keeping an existing file's mode as the sidecar does. It lets the
// git tools' command lines meet a real git.
type hostSandbox struct {
	Sandbox // the other methods are not used; calling one panics
	env     []string
	modes   map[string]fs.FileMode // mode of each file when WriteFile filled it
}

func (h *hostSandbox) Exec(ctx context.Context, r api.ExecRequest) (*api.ExecResult, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", r.Command)
	cmd.Env = h.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return nil, err
	}
	return &api.ExecResult{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String()}, nil
}

func (h *hostSandbox) WriteFile(_ context.Context, r api.FileCreateRequest) (*api.FileCreateResult, error) {
	if fi, err := os.Stat(r.Path); err == nil {
		h.modes[r.Path] = fi.Mode().Perm()
	}
	if err := os.WriteFile(r.Path, []byte(r.Content), 0o644); err != nil { // an existing file keeps its mode
		return nil, err
	}
	return &api.FileCreateResult{Path: r.Path, Size: int64(len(r.Content))}, nil
}

func TestGitToolsWithRealGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	home := t.TempDir()
	repo := filepath.Join(t.TempDir(), "my repo") // a space, to exercise quoting
	bare := filepath.Join(t.TempDir(), "remote.git")
	sb := &hostSandbox{
		env:   []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "LANG=C"},
		modes: map[string]fs.FileMode{},
	}
	run := func(tool string, args map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(args)
		return Call(context.Background(), Git(), sb, tool, b)
	}
	mustSh := func(cmd string) {
		t.Helper()
		res, err := sb.Exec(context.Background(), api.ExecRequest{Command: cmd})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %v %+v", cmd, err, res)
		}
	}
	mustSh("git init -q --bare " + shellQuote(bare) + " && git init -q -b main " + shellQuote(repo) +
		" && git -C " + shellQuote(repo) + " remote add origin " + shellQuote(bare))
	if err := os.WriteFile(filepath.Join(repo, "it's.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		tool string
		args map[string]any
		want string // a substring of the text
	}{
		{"git_status", map[string]any{"path": repo}, "it's.txt"},
		{"git_add", map[string]any{"path": repo, "files": []string{"it's.txt"}}, "Staged it's.txt in " + repo},
		{"git_commit", map[string]any{"path": repo, "message": "first 'quoted' $(commit)", "author_name": "Ada Lovelace", "author_email": "ada@example.com"}, "first 'quoted' $(commit)"},
		{"git_branch", map[string]any{"path": repo, "name": "feature/x"}, "Created branch feature/x"},
		{"git_branch", map[string]any{"path": repo}, "feature/x"},
		{"git_checkout", map[string]any{"path": repo, "ref": "feature/x"}, "Switched to branch 'feature/x'"},
		{"git_checkout", map[string]any{"path": repo, "ref": "topic", "create": true}, "Switched to a new branch 'topic'"},
		{"git_checkout", map[string]any{"path": repo, "ref": "HEAD~1"}, "Error (exit code 128)"},
		{"git_push", map[string]any{"path": repo, "branch": "topic", "token": "not-really-needed"}, "topic -> topic"},
		{"git_push", map[string]any{"path": repo, "branch": "topic", "force": true}, "Everything up-to-date"},
		{"git_pull", map[string]any{"path": repo, "branch": "topic", "token": "not-really-needed"}, "Already up to date"},
	}
	for _, s := range steps {
		got := run(s.tool, s.args)
		if !strings.Contains(got, s.want) {
			t.Errorf("%s %v = %q, want it to contain %q", s.tool, s.args, got, s.want)
		}
	}
	log, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%an <%ae> %s").Output()
	if err != nil || string(log) != "Ada Lovelace <ada@example.com> first 'quoted' $(commit)\n" {
		t.Errorf("last commit = %q (%v)", log, err)
	}

	if len(sb.modes) != 2 {
		t.Fatalf("credential files written = %v, want 2", sb.modes)
	}
	for p, mode := range sb.modes {
		if !strings.HasPrefix(p, credPrefix) || mode != 0o600 {
			t.Errorf("credential file %s had mode %v when filled, want 0600 under %s", p, mode, credPrefix)
		}
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("credential file %s still exists: %v", p, err)
		}
	}
}
