package tools

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Git returns the 8 git tools of reference §4.3. They run git through Exec;
// every value that reaches the command line is checked against an
// allow-list and shell-quoted. Credentials never do: see withCredential.
func Git() []Tool {
	return []Tool{
		gitCloneTool(),
		gitStatusTool(),
		gitAddTool(),
		gitCommitTool(),
		gitPushTool(),
		gitPullTool(),
		gitBranchTool(),
		gitCheckoutTool(),
	}
}

// Timeouts of git commands, in seconds (reference §4.3).
const (
	gitNetTimeout   = 300 // clone, push, pull
	gitLocalTimeout = 60
)

// credPrefix starts the name of every credential file; 32 random hex
// digits follow.
const credPrefix = "/tmp/boxkite-git-cred-"

const (
	repoDefault  = "/workspace"
	cloneDefault = "/workspace/repo"
)

var (
	pathDoc   = "The repository's directory in the sandbox (default \"/workspace\")."
	tokenDoc  = "An HTTPS access token (e.g. a GitHub or GitLab token). It is written to a private temporary file for this one call, never to the command line, and deleted afterwards."
	sshKeyDoc = "An SSH private key (the full PEM/OpenSSH text) for ssh:// or git@ URLs, handled like token."
)

// credential is what a network git tool may be handed to authenticate.
type credential struct {
	Token  string `json:"token"`
	SSHKey string `json:"ssh_key"`
}

// check returns what is wrong with c, or "".
func (c credential) check() string {
	switch {
	case c.Token != "" && c.SSHKey != "":
		return "Error: pass token or ssh_key, not both"
	case len(c.Token) > 4096 || hasControl(c.Token) || strings.ContainsAny(c.Token, " \\\""):
		return "Error: token must be a single line of at most 4096 characters without spaces, quotes or backslashes"
	case len(c.SSHKey) > 64<<10:
		return "Error: ssh_key is larger than 64 KiB"
	}
	return ""
}

// secrets are the strings to scrub from output: the token, its Basic
// header value and the key's lines.
func (c credential) secrets() []string {
	var s []string
	if c.Token != "" {
		s = append(s, c.Token, basicAuth(c.Token))
	}
	for _, line := range strings.Split(c.SSHKey, "\n") {
		if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			s = append(s, line)
		}
	}
	return s
}

func basicAuth(token string) string {
	return base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
}

// withCredential runs fn with the git -c options (already shell words) that
// make git use c. With no credential it just runs fn(nil).
//
// The credential goes into a fresh file under /tmp in the sandbox, created
// empty with mode 0600 before anything is written to it (file-create keeps an
// existing file's mode, so the content never exists with wider permissions),
// filled with WriteFile (whose content the audit log never records), named
// on the command line by path only, and deleted when fn returns, whatever
// happened. A token becomes an http.extraHeader in a config file git reads
// through include.path; an SSH key is used through core.sshCommand.
func withCredential(ctx context.Context, sb Sandbox, c credential, fn func(opts []string) (string, error)) (text string, err error) {
	if c.Token == "" && c.SSHKey == "" {
		return fn(nil)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	path := credPrefix + hex.EncodeToString(b[:])
	defer func() {
		if warn := removeCredential(ctx, sb, path); warn != "" {
			text += "\n\n" + warn
		}
	}()
	res, err := sb.Exec(ctx, api.ExecRequest{
		// noclobber (set -C): fail rather than write through anything already there.
		Command:     "umask 077 && set -C && : > " + path,
		Timeout:     30,
		Description: "create a private git credential file",
	})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if res.ExitCode != 0 {
		return "Error: could not create a credential file in /tmp:\n" + combine(res.Stdout, res.Stderr), nil
	}
	var content, opt string
	if c.Token != "" {
		content = "[http]\n\textraHeader = Authorization: Basic " + basicAuth(c.Token) + "\n"
		opt = "include.path=" + path
	} else {
		content = strings.TrimRight(c.SSHKey, "\n") + "\n" // ssh refuses a key without its final newline
		opt = "core.sshCommand=ssh -i " + path + " -o IdentitiesOnly=yes -o StrictHostKeyChecking=accept-new -o BatchMode=yes"
	}
	if _, err := sb.WriteFile(ctx, api.FileCreateRequest{Path: path, Content: content}); err != nil {
		text, _, err := result(ctx, err)
		return text, err
	}
	return fn([]string{"-c", shellQuote(opt)})
}

// removeCredential deletes a credential file, even when ctx is already
// canceled, and returns a warning for the agent when it could not.
func removeCredential(ctx context.Context, sb Sandbox, path string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	res, err := sb.Exec(ctx, api.ExecRequest{Command: "rm -f -- " + path, Timeout: 30, Description: "remove the git credential file"})
	if err == nil && res.ExitCode == 0 {
		return ""
	}
	return fmt.Sprintf("Warning: could not remove the credential file %s; remove it with: rm -f %s", path, path)
}

// gitRun runs git with words (each already checked and quoted) and returns
// the text for the agent: success(output) when git exits 0, else the
// bash_tool-style error. Output is redacted and scrubbed of secrets.
func gitRun(ctx context.Context, sb Sandbox, words []string, timeout int, secrets []string, success func(out string) string) (string, error) {
	// GIT_TERMINAL_PROMPT=0: a missing credential fails at once instead of
	// waiting, promptless, for the timeout.
	cmd := "GIT_TERMINAL_PROMPT=0 git " + strings.Join(words, " ")
	res, err := sb.Exec(ctx, api.ExecRequest{Command: cmd, Timeout: timeout})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	out := Redact(scrub(combine(res.Stdout, res.Stderr), secrets...))
	if res.ExitCode == 0 {
		return success(out), nil
	}
	if out == "" {
		out = "(no output)"
	}
	text := fmt.Sprintf("Error (exit code %d):\n%s", res.ExitCode, out)
	switch {
	case strings.Contains(out, "Please tell me who you are"):
		text += "\n\nHint: pass author_name and author_email to git_commit."
	case strings.Contains(out, "could not read Username") || strings.Contains(out, "Authentication failed") || strings.Contains(out, "Permission denied (publickey"):
		text += "\n\nHint: the remote wants credentials; pass token (HTTPS) or ssh_key (SSH)."
	case strings.Contains(out, "Could not resolve host") || strings.Contains(out, "unable to access"):
		text += "\n\nHint: the sandbox may have no network access to this host."
	}
	return text, nil
}

// outOr returns out, or alt when git printed nothing.
func outOr(alt string) func(string) string {
	return func(out string) string {
		if out == "" {
			return alt
		}
		return out
	}
}

// repoPath applies the default and checks a repository path.
func repoPath(p, def string) (string, string) {
	if p == "" {
		p = def
	}
	return p, checkPath("path", p)
}

func gitCloneTool() Tool {
	return Tool{
		Name: "git_clone",
		Description: "Clone a git repository into the sandbox. The URL must start with https://, http://, ssh:// or git@; " +
			"submodules are not cloned. Pass token or ssh_key for private repositories.",
		Schema: object(
			strParam("url", "The repository URL.").req(),
			strParam("path", "Where to clone it (default \"/workspace/repo\").").dflt(cloneDefault),
			strParam("branch", "The branch or tag to check out (default: the remote's default branch)."),
			intParam("depth", "Clone only this many commits of history (default: all).", 0, 1, 0).dflt(nil).noMax(),
			strParam("token", tokenDoc),
			strParam("ssh_key", sshKeyDoc),
		),
		Handler: runGitClone,
	}
}

func runGitClone(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		URL    string `json:"url"`
		Path   string `json:"path"`
		Branch string `json:"branch"`
		Depth  int    `json:"depth"`
		credential
	}
	if msg := decode("git_clone", args, &in); msg != "" {
		return msg, nil
	}
	p, msg := repoPath(in.Path, cloneDefault)
	if msg == "" {
		msg = checkGitURL(in.URL)
	}
	if msg == "" && in.Branch != "" {
		msg = checkBranch("branch", in.Branch)
	}
	if msg == "" && in.Depth < 0 {
		msg = "Error: depth must be at least 1"
	}
	if msg == "" {
		msg = in.credential.check()
	}
	if msg != "" {
		return msg, nil
	}
	return withCredential(ctx, sb, in.credential, func(opts []string) (string, error) {
		// --no-local: a clone never hard-links or copies another local
		// repository's objects; no --recurse-submodules: submodule URLs are
		// not ours to vet.
		w := append(opts, "clone", "--no-local")
		if in.Branch != "" {
			w = append(w, "--branch", shellQuote(in.Branch))
		}
		if in.Depth > 0 {
			w = append(w, "--depth", fmt.Sprint(in.Depth))
		}
		w = append(w, "--", shellQuote(in.URL), shellQuote(p))
		return gitRun(ctx, sb, w, gitNetTimeout, in.credential.secrets(), func(string) string {
			return fmt.Sprintf("Cloned %s into %s", in.URL, p)
		})
	})
}

func gitPushTool() Tool {
	return Tool{
		Name:        "git_push",
		Description: "Push commits of a git repository in the sandbox to a remote. Pass token or ssh_key when the remote needs credentials.",
		Schema: object(
			strParam("path", pathDoc).dflt(repoDefault),
			strParam("remote", "The remote to push to (default \"origin\").").dflt("origin"),
			strParam("branch", "The branch to push (default: git's push.default, usually the current branch)."),
			strParam("token", tokenDoc),
			strParam("ssh_key", sshKeyDoc),
			boolParam("force", "Overwrite the remote branch even if that loses commits on it (default false).", false),
		),
		Handler: runGitPush,
	}
}

func runGitPush(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		remoteArgs
		Force bool `json:"force"`
	}
	if msg := decode("git_push", args, &in); msg != "" {
		return msg, nil
	}
	p, msg := in.check()
	if msg != "" {
		return msg, nil
	}
	return withCredential(ctx, sb, in.credential, func(opts []string) (string, error) {
		w := append(opts, "-C", shellQuote(p), "push")
		if in.Force {
			w = append(w, "--force")
		}
		w = append(w, in.refspec()...)
		return gitRun(ctx, sb, w, gitNetTimeout, in.credential.secrets(), outOr("Pushed to "+in.Remote))
	})
}

func gitPullTool() Tool {
	return Tool{
		Name: "git_pull",
		Description: "Fetch from a remote and merge into the current branch of a git repository in the sandbox. " +
			"Pass token or ssh_key when the remote needs credentials. The repository's own hooks run.",
		Schema: object(
			strParam("path", pathDoc).dflt(repoDefault),
			strParam("remote", "The remote to pull from (default \"origin\").").dflt("origin"),
			strParam("branch", "The remote branch to merge (default: the current branch's upstream)."),
			strParam("token", tokenDoc),
			strParam("ssh_key", sshKeyDoc),
		),
		Handler: runGitPull,
	}
}

func runGitPull(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in remoteArgs
	if msg := decode("git_pull", args, &in); msg != "" {
		return msg, nil
	}
	p, msg := in.check()
	if msg != "" {
		return msg, nil
	}
	return withCredential(ctx, sb, in.credential, func(opts []string) (string, error) {
		w := append(append(opts, "-C", shellQuote(p), "pull"), in.refspec()...)
		return gitRun(ctx, sb, w, gitNetTimeout, in.credential.secrets(), outOr("Pulled from "+in.Remote))
	})
}

// remoteArgs are the arguments git_push and git_pull share.
type remoteArgs struct {
	Path   string `json:"path"`
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	credential
}

// check applies the defaults and returns the repository path and what is
// wrong with the arguments, or "".
func (a *remoteArgs) check() (string, string) {
	if a.Remote == "" {
		a.Remote = "origin"
	}
	p, msg := repoPath(a.Path, repoDefault)
	if msg == "" {
		msg = checkRemote(a.Remote)
	}
	if msg == "" && a.Branch != "" {
		msg = checkBranch("branch", a.Branch)
	}
	if msg == "" {
		msg = a.credential.check()
	}
	return p, msg
}

// refspec is the remote and, when given, the branch, as shell words.
func (a *remoteArgs) refspec() []string {
	w := []string{shellQuote(a.Remote)}
	if a.Branch != "" {
		w = append(w, shellQuote(a.Branch))
	}
	return w
}
