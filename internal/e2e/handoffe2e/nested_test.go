package handoffe2e

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
	"github.com/boxkite/boxkite/handoff/handofftest"
	"github.com/boxkite/boxkite/server/servertest"
)

// nestedRepos are the repositories layOutNestedRepos makes in the
// fixture's project, which is the superproject: a submodule as git links
// it (relative links), a submodule whose links are absolute (as git before
// 1.7.10 wrote them), a clone and a linked worktree of the clone.
var nestedRepos = []string{".", "lib", "lib-abs", "vendor/clone", "vendor/clone-feat"}

// layOutNestedRepos makes the repositories of nestedRepos in the
// fixture's project, each with a change of its own, and a worktree of the
// clone beside the project; it returns the repositories outside the
// project (the submodules' and clone's origin, that worktree).
func layOutNestedRepos(t *testing.T, fx *handofftest.Fixture) []string {
	t.Helper()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", "-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+fx.Home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(p, body string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := filepath.Dir(fx.Src)
	lib := filepath.Join(base, "lib")
	git(base, "init", "-q", lib)
	write(filepath.Join(lib, "lib.go"), "package lib\n")
	git(lib, "add", "-A")
	git(lib, "commit", "-qm", "lib")

	src := fx.Src
	git(src, "submodule", "add", "-q", lib, "lib")
	git(src, "submodule", "add", "-q", lib, "lib-abs")
	git(src, "commit", "-qm", "submodules")
	module := filepath.Join(src, ".git", "modules", "lib-abs")
	write(filepath.Join(src, "lib-abs", ".git"), "gitdir: "+module+"\n")
	git(src, "config", "--file", filepath.Join(module, "config"), "core.worktree", filepath.Join(src, "lib-abs"))
	write(filepath.Join(src, "lib", "lib.go"), "package lib // edited in the submodule\n")
	write(filepath.Join(src, "lib-abs", "new.txt"), "untracked in the submodule\n")

	clone := filepath.Join(src, "vendor", "clone")
	git(src, "clone", "-q", lib, clone)
	feat := filepath.Join(src, "vendor", "clone-feat")
	git(clone, "worktree", "add", "-q", "-b", "feat", feat)
	write(filepath.Join(feat, "lib.go"), "package lib // feat\n")
	git(feat, "commit", "-qam", "in the clone's worktree")
	write(filepath.Join(feat, "new.txt"), "untracked in the clone's worktree\n")
	out := filepath.Join(base, "clone-out")
	git(clone, "worktree", "add", "-q", "-b", "out", out)
	return []string{lib, out}
}

// gitStateCmd is what git says of a work tree: branch, history, status
// (but of the fixture's symlink out of the tree, which stays behind).
const gitStateCmd = "git rev-parse --abbrev-ref HEAD && git log --format=%s && git status --porcelain -- . ':!/hosts'"

// TestHandoffNestedRepos: a project holding nested repositories
// (nestedRepos) is prepared and transferred as boxkite handoff does it,
// into a real sandbox of the local driver; with this machine's
// repositories moved away, git in each repository in the sandbox shows
// the branch, history and status it shows here, and git worktree list in
// the clone lists its worktree in the tree (not prunable) and not the one
// beside it, which a warning names. Before, git in the submodule with
// absolute links and in the clone's worktree failed ("not a git
// repository") and the clone listed both worktrees prunable.
func TestHandoffNestedRepos(t *testing.T) {
	fx := handofftest.Install(t)
	outside := layOutNestedRepos(t, fx)
	want := map[string]string{}
	for _, dir := range nestedRepos {
		cmd := exec.Command("sh", "-c", gitStateCmd)
		cmd.Dir = filepath.Join(fx.Src, filepath.FromSlash(dir))
		cmd.Env = append(os.Environ(), "HOME="+fx.Home, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git in %s: %v\n%s", dir, err, out)
		}
		want[dir] = string(out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	plan, err := handoff.Prepare(ctx, handoff.Adapters()["claude-code"], handoff.Env{Home: fx.Home, Getenv: fx.Env()}, handoff.Options{Dir: fx.Src})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(plan.StageDir)
	left := "vendor/clone/.git/worktrees/clone-out: linked worktree " + outside[1] + " is not in the tree, left out (git in the sandbox would show it prunable)"
	if !slices.Contains(plan.Warnings, left) {
		t.Errorf("warnings %q; want %q", plan.Warnings, left)
	}

	s := servertest.New(t)
	c := &client.Client{BaseURL: s.BaseURL, APIKey: s.APIKey}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "handoff-nested"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handoff.Transfer(ctx, plan, sandboxFiles{c, sb.ID}, sb.ID, nil); err != nil {
		t.Fatal(err)
	}
	for _, dir := range append([]string{fx.Src}, outside...) {
		if err := os.Rename(dir, dir+".gone"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(dir+".gone", dir)
	}
	for _, dir := range nestedRepos {
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: gitStateCmd, Cwd: sandboxSrc + "/" + dir, Timeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || res.Stdout != want[dir] {
			t.Errorf("git in %s in the sandbox: exit %d, stdout %q, stderr %q; want, as here, %q", dir, res.ExitCode, res.Stdout, res.Stderr, want[dir])
		}
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{
		Command: "git worktree list --porcelain | grep -e '^worktree' -e '^prunable'",
		Cwd:     sandboxSrc + "/vendor/clone", Timeout: 60,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantList := "worktree " + sandboxSrc + "/vendor/clone\nworktree " + sandboxSrc + "/vendor/clone-feat\n"
	if res.ExitCode != 0 || res.Stdout != wantList {
		t.Errorf("git worktree list in the sandbox's clone: exit %d, stdout %q, stderr %q; want %q", res.ExitCode, res.Stdout, res.Stderr, wantList)
	}
}

// sandboxFiles is handoff.Sandbox over the client, for one sandbox.
type sandboxFiles struct {
	c  *client.Client
	id string
}

func (f sandboxFiles) UploadArchive(ctx context.Context, dir string, r io.Reader) (*api.ArchiveResult, error) {
	return f.c.UploadArchive(ctx, f.id, dir, r)
}

func (f sandboxFiles) ReadFile(ctx context.Context, p string) ([]byte, error) {
	d, err := f.c.DownloadFile(ctx, f.id, p)
	if e, ok := errors.AsType[*api.Error](err); ok && e.Status == 404 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(d)
}
