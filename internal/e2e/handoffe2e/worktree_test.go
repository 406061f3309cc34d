package handoffe2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff/handofftest"
	"github.com/boxkite/boxkite/internal/lockedbuf"
)

// e2eClaudeWorktree is the Claude Code session recorded in a linked
// worktree of the fixture's project.
const e2eClaudeWorktree = "5e2e0000-0000-4000-8000-0000000077e1"

// innerWorktree is a linked worktree inside the fixture's project, on
// branch innerBranch.
const innerWorktree, innerBranch = ".claude/worktrees/inner", "inner-branch"

// layOutWorktree makes a linked git worktree of the fixture's project
// (its .git a file naming the main repository's) with a commit of its
// own, and a Claude Code session recorded there; it returns the worktree.
// A second linked worktree, innerWorktree, lies inside the project: the
// project's handoffs carry it.
func layOutWorktree(t *testing.T, fx *handofftest.Fixture) string {
	t.Helper()
	wt := filepath.Join(filepath.Dir(fx.Src), "my_app.wt")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+fx.Home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(fx.Src, "worktree", "add", "-q", "-b", "wt-branch", wt)
	git(fx.Src, "worktree", "add", "-q", "-b", innerBranch, filepath.Join(fx.Src, filepath.FromSlash(innerWorktree)))
	if err := os.WriteFile(filepath.Join(wt, "wt.txt"), []byte("made in the worktree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(wt, "add", "wt.txt")
	git(wt, "commit", "-q", "-m", "in the worktree")

	// The fixture's Claude Code session, recorded in the worktree.
	b, err := os.ReadFile(filepath.Join(fx.Home, ".claude/projects", handofftest.EncodeClaude(fx.Src), e2eClaude+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	session := strings.NewReplacer(`"cwd":"`+fx.Src+`"`, `"cwd":"`+wt+`"`, e2eClaude, e2eClaudeWorktree,
		"claude-marker", "worktree-marker", `"gitBranch":"main"`, `"gitBranch":"wt-branch"`).Replace(string(b))
	dir := filepath.Join(fx.Home, ".claude/projects", handofftest.EncodeClaude(wt))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, e2eClaudeWorktree+".jsonl"), []byte(session), 0o600); err != nil {
		t.Fatal(err)
	}
	return wt
}

// handOffWorktree hands off the session of layOutWorktree from its
// worktree: the real agent resumes it, and git in the sandbox knows the
// worktree's branch and commit.
func handOffWorktree(t *testing.T, c *client.Client, wt string, tc agentCase, serverLog *lockedbuf.Buffer) {
	t.Chdir(wt)
	tc.session, tc.marker = e2eClaudeWorktree, "worktree-marker: count the files"
	term := newVterm(t)
	term.failFast(cliError, func(line string) string { return serverAccount(serverLog.String(), line) })
	done := term.run("handoff", tc.tool, "--session", tc.session, "--no-egress")
	id := term.match("the new sandbox", 15*time.Minute, regexp.MustCompile(`created sandbox (\S+) \(no egress\)`))[1]
	term.failFast(nil, nil)
	term.expect("the resumed session", agentStartWait, tc.marker)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.Exec(ctx, id, api.ExecRequest{
		Command: "git rev-parse --abbrev-ref HEAD && git log -1 --format=%s && git status --porcelain -- wt.txt main.go sub",
		Cwd:     "/workspace/my_app.wt", Timeout: 60,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "wt-branch\nin the worktree\n"; res.ExitCode != 0 || res.Stdout != want {
		t.Errorf("git in the sandbox: exit %d, stdout %q, stderr %q; want %q", res.ExitCode, res.Stdout, res.Stderr, want)
	}
	endAgent(t, term, tc, id)
	term.send("\x1d") // detach
	waitExit(t, done, "boxkite handoff")
}
