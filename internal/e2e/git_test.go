package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/tools"
)

// TestGitTools drives the 8 git tools against repositories inside a real
// sandbox: a working repository, a bare one as its remote (push and pull
// by remote name), and that bare one served over HTTP by a background
// process on the sandbox's loopback, so git_clone runs offline too.
func TestGitTools(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	tb := sb.toolbox(t)
	if n := len(tools.Git()); n != 8 {
		t.Fatalf("tools.Git() has %d tools, want 8", n)
	}
	sb.sh(`set -e
git init -q -b main /workspace/proj
git init -q --bare -b main /tmp/remote.git
git -C /workspace/proj remote add origin /tmp/remote.git`)
	sb.ok("POST", "/files", map[string]string{"path": "proj/README.md", "content": "# proj\n"})

	const who = `"author_name":"Agent Smith","author_email":"agent@example.com"`
	tb.run([]toolStep{
		{name: "git_status", args: `{"path":"/workspace/proj"}`, has: []string{"On branch main", "Untracked files", "README.md"}},
		{name: "git_add", args: `{"path":"/workspace/proj","files":["README.md"]}`, want: "Staged README.md in /workspace/proj"},
		{name: "git_commit", args: `{"path":"/workspace/proj","message":"first commit"}`, has: []string{"Error (exit code", "Hint: pass author_name and author_email"}},
		{name: "git_commit", args: `{"path":"/workspace/proj","message":"first commit",` + who + `}`, has: []string{"[main (root-commit)", "first commit"}},
		{name: "git_branch", args: `{"path":"/workspace/proj","name":"feature"}`, want: "Created branch feature"},
		{name: "git_branch", args: `{"path":"/workspace/proj"}`, want: "  feature\n* main"},
		{name: "git_checkout", args: `{"path":"/workspace/proj","ref":"feature"}`, has: []string{"Switched to branch 'feature'"}},
		{name: "git_checkout", args: `{"path":"/workspace/proj","ref":"topic","create":true}`, has: []string{"Switched to a new branch 'topic'"}},
		{name: "git_checkout", args: `{"path":"/workspace/proj","ref":"main"}`, has: []string{"Switched to branch 'main'"}},
		{name: "git_checkout", args: `{"path":"/workspace/proj","ref":"--orphan"}`, has: []string{"Error"}},
		{name: "git_push", args: `{"path":"/workspace/proj","remote":"origin","branch":"main"}`, has: []string{"main -> main"}},
		{name: "git_status", args: `{"path":"/workspace/proj"}`, has: []string{"nothing to commit, working tree clean"}},
	})
	if out := sb.sh("git -C /tmp/remote.git log --format=%an:%s main"); out != "Agent Smith:first commit\n" {
		t.Errorf("remote after git_push: %q", out)
	}

	// Someone else pushes to the remote; git_pull brings it in.
	sb.sh(`set -e
git clone -q /tmp/remote.git /tmp/other
cd /tmp/other
echo more > more.txt
git add more.txt
git -c user.name=Other -c user.email=o@example.com commit -q -m second
git push -q origin main`)
	tb.run([]toolStep{
		{name: "git_pull", args: `{"path":"/workspace/proj","remote":"origin","branch":"main"}`, has: []string{"Fast-forward", "more.txt"}},
	})
	if out := sb.sh("cat /workspace/proj/more.txt"); out != "more\n" {
		t.Errorf("more.txt after git_pull: %q", out)
	}

	t.Run("clone", func(t *testing.T) {
		sb := sb.in(t)
		tb := sb.toolbox(t)
		tb.run([]toolStep{
			{name: "git_clone", args: `{"url":"file:///tmp/remote.git"}`, has: []string{"is not a git URL this tool accepts"}},
			{name: "git_clone", args: `{"url":"/tmp/remote.git"}`, has: []string{"is not a git URL this tool accepts"}},
			{name: "git_clone", args: `{"url":"ext::sh -c touch% /tmp/pwned"}`, has: []string{"is not a git URL this tool accepts"}},
		})
		// Git's dumb HTTP protocol needs only static files: a Python
		// server on the sandbox's loopback serves the bare repository.
		sb.sh("git -C /tmp/remote.git update-server-info")
		sb.startProc("exec python3 -m http.server 8765 --bind 127.0.0.1 --directory /tmp", 120)
		deadline := time.Now().Add(20 * time.Second)
		for sb.exec("python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8765/remote.git/HEAD\")'").ExitCode != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the HTTP server in the sandbox did not come up")
			}
			time.Sleep(50 * time.Millisecond)
		}
		tb.run([]toolStep{
			{name: "git_clone", args: `{"url":"http://127.0.0.1:8765/remote.git","path":"/workspace/cloned"}`, want: "Cloned http://127.0.0.1:8765/remote.git into /workspace/cloned"},
			// A token rides along in an http.extraHeader; the dumb server ignores it.
			{name: "git_clone", args: `{"url":"http://127.0.0.1:8765/remote.git","path":"/workspace/withtoken","branch":"main","token":"ghp_e2eSecretToken0123456789"}`, want: "Cloned http://127.0.0.1:8765/remote.git into /workspace/withtoken"},
			// The dumb protocol cannot do shallow clones: git's error comes back as text.
			{name: "git_clone", args: `{"url":"http://127.0.0.1:8765/remote.git","path":"/workspace/shallow","depth":1}`, has: []string{"Error (exit code 128)", "dumb http transport does not support shallow"}},
			{name: "git_clone", args: `{"url":"http://127.0.0.1:1/nothing.git","path":"/workspace/nothing"}`, has: []string{"Error (exit code 128)"}},
		})
		if out := sb.sh("cat /workspace/cloned/more.txt && git -C /workspace/withtoken rev-list --count HEAD"); out != "more\n2\n" {
			t.Errorf("clones: %q", out)
		}
		// The token went through a private file that is gone again, and
		// never into the clone's configuration.
		if out := sb.sh("ls /tmp | grep -c boxkite-git-cred || true; grep -rc ghp_e2e /workspace/withtoken/.git/config || true"); out != "0\n0\n" {
			t.Errorf("credential traces: %q", out)
		}
		if !strings.Contains(sb.sh("git -C /workspace/cloned log --format=%s"), "second") {
			t.Errorf("clone lacks the pulled commit")
		}
	})
}
