package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

func gitCall(cmd string, timeout int) call {
	return call{"Exec", api.ExecRequest{Command: "GIT_TERMINAL_PROMPT=0 git " + cmd, Timeout: timeout}}
}

func TestGitTools(t *testing.T) {
	ok := execReturns
	t.Run("git_clone", func(t *testing.T) {
		runTool(t, "git_clone", []toolCase{
			{
				name:  "public",
				args:  `{"url":"https://github.com/o/r.git"}`,
				fake:  fake{exec: ok("", "Cloning into '/workspace/repo'...\n", 0)},
				want:  "Cloned https://github.com/o/r.git into /workspace/repo",
				calls: []call{gitCall("clone --no-local -- https://github.com/o/r.git /workspace/repo", 300)},
			},
			{
				name:  "branch, depth, quoted path",
				args:  `{"url":"git@github.com:o/r.git","path":"/workspace/my repo","branch":"v1.2","depth":1}`,
				fake:  fake{exec: ok("", "", 0)},
				want:  "Cloned git@github.com:o/r.git into /workspace/my repo",
				calls: []call{gitCall("clone --no-local --branch v1.2 --depth 1 -- git@github.com:o/r.git '/workspace/my repo'", 300)},
			},
			{
				name:  "failure",
				args:  `{"url":"https://example.com/r.git"}`,
				fake:  fake{exec: ok("", "fatal: unable to access 'https://example.com/r.git/': Could not resolve host: example.com\n", 128)},
				want:  "Error (exit code 128):\nfatal: unable to access 'https://example.com/r.git/': Could not resolve host: example.com\n\nHint: the sandbox may have no network access to this host.",
				calls: []call{gitCall("clone --no-local -- https://example.com/r.git /workspace/repo", 300)},
			},
			{name: "file url", args: `{"url":"file:///etc"}`, want: `Error: url "file:///etc" is not a git URL this tool accepts (https://, http://, ssh:// or git@host:path)`},
			{name: "option url", args: `{"url":"--upload-pack=touch /tmp/x"}`, want: `Error: url "--upload-pack=touch /tmp/x" is not a git URL this tool accepts (https://, http://, ssh:// or git@host:path)`},
			{name: "password in url", args: `{"url":"https://me:s3cret@github.com/o/r"}`, want: "Error: url contains a password; pass the credential in the token parameter instead"},
			{name: "option branch", args: `{"url":"https://github.com/o/r","branch":"--upload-pack=x"}`, want: `Error: branch "--upload-pack=x" is not a valid git name (letters, digits and . _ / + -, not starting with - or ending in / . or .lock)`},
			{name: "both credentials", args: `{"url":"https://github.com/o/r","token":"t","ssh_key":"k"}`, want: "Error: pass token or ssh_key, not both"},
			{name: "token with newline", args: `{"url":"https://github.com/o/r","token":"a\nb"}`, want: "Error: token must be a single line of at most 4096 characters without spaces, quotes or backslashes"},
			{name: "zero depth", args: `{"url":"https://github.com/o/r","depth":-1}`, want: "Error: depth must be at least 1"},
		})
	})
	t.Run("git_status", func(t *testing.T) {
		runTool(t, "git_status", []toolCase{
			{
				name:  "clean",
				args:  `{}`,
				fake:  fake{exec: ok("On branch main\nnothing to commit, working tree clean\n", "", 0)},
				want:  "On branch main\nnothing to commit, working tree clean",
				calls: []call{gitCall("-C /workspace status", 60)},
			},
			{
				name:  "not a repository",
				args:  `{"path":"/tmp/x y"}`,
				fake:  fake{exec: ok("", "fatal: not a git repository (or any of the parent directories): .git\n", 128)},
				want:  "Error (exit code 128):\nfatal: not a git repository (or any of the parent directories): .git",
				calls: []call{gitCall("-C '/tmp/x y' status", 60)},
			},
			{name: "control character", args: `{"path":"a\u001bb"}`, want: "Error: path must not contain control characters"},
		})
	})
	t.Run("git_add", func(t *testing.T) {
		runTool(t, "git_add", []toolCase{
			{
				name:  "all",
				args:  `{}`,
				fake:  fake{exec: ok("", "", 0)},
				want:  "Staged all changes in /workspace",
				calls: []call{gitCall("-C /workspace add -A", 60)},
			},
			{
				name:  "files, quoted",
				args:  `{"path":"repo","files":["a b.txt","it's.go","-n"]}`,
				fake:  fake{exec: ok("", "", 0)},
				want:  "Staged a b.txt, it's.go, -n in repo",
				calls: []call{gitCall(`-C repo add -- 'a b.txt' 'it'\''s.go' -n`, 60)},
			},
			{name: "newline in a file", args: `{"files":["a\nb"]}`, want: "Error: file must not contain control characters"},
			{name: "empty file", args: `{"files":[""]}`, want: "Error: file must not be empty"},
		})
	})
	t.Run("git_commit", func(t *testing.T) {
		runTool(t, "git_commit", []toolCase{
			{
				name:  "with author",
				args:  `{"message":"it's done\n\nbody $(rm -rf /)","author_name":"Ada Lovelace","author_email":"ada@example.com"}`,
				fake:  fake{exec: ok("[main 1a2b3c4] it's done\n 1 file changed\n", "", 0)},
				want:  "[main 1a2b3c4] it's done\n 1 file changed",
				calls: []call{gitCall(`-c 'user.name=Ada Lovelace' -c user.email=ada@example.com -C /workspace commit -m 'it'\''s done`+"\n\n"+`body $(rm -rf /)'`, 60)},
			},
			{
				name:  "no identity",
				args:  `{"message":"x"}`,
				fake:  fake{exec: ok("", "Author identity unknown\n\n*** Please tell me who you are.\n", 128)},
				want:  "Error (exit code 128):\nAuthor identity unknown\n\n*** Please tell me who you are.\n\nHint: pass author_name and author_email to git_commit.",
				calls: []call{gitCall("-C /workspace commit -m x", 60)},
			},
			{name: "blank message", args: `{"message":" "}`, want: "Error: message must not be empty"},
			{name: "bad email", args: `{"message":"x","author_email":"a>b"}`, want: "Error: author_email must be one line of at most 256 characters without < or >"},
		})
	})
	t.Run("git_push", func(t *testing.T) {
		runTool(t, "git_push", []toolCase{
			{
				name:  "force a branch",
				args:  `{"branch":"feature/x","force":true}`,
				fake:  fake{exec: ok("", "", 0)},
				want:  "Pushed to origin",
				calls: []call{gitCall("-C /workspace push --force origin feature/x", 300)},
			},
			{
				name:  "needs credentials",
				args:  `{"remote":"upstream"}`,
				fake:  fake{exec: ok("", "fatal: could not read Username for 'https://github.com': terminal prompts disabled\n", 128)},
				want:  "Error (exit code 128):\nfatal: could not read Username for 'https://github.com': terminal prompts disabled\n\nHint: the remote wants credentials; pass token (HTTPS) or ssh_key (SSH).",
				calls: []call{gitCall("-C /workspace push upstream", 300)},
			},
			{name: "option remote", args: `{"remote":"--exec=x"}`, want: `Error: remote "--exec=x" is not a valid remote name (letters, digits and . _ -)`},
			{name: "dotdot branch", args: `{"branch":"a..b"}`, want: `Error: branch "a..b" is not a valid git name (letters, digits and . _ / + -, not starting with - or ending in / . or .lock)`},
		})
	})
	t.Run("git_pull", func(t *testing.T) {
		runTool(t, "git_pull", []toolCase{
			{
				name:  "upstream",
				args:  `{"path":"/workspace/repo"}`,
				fake:  fake{exec: ok("Already up to date.\n", "", 0)},
				want:  "Already up to date.",
				calls: []call{gitCall("-C /workspace/repo pull origin", 300)},
			},
		})
	})
	t.Run("git_branch", func(t *testing.T) {
		runTool(t, "git_branch", []toolCase{
			{
				name:  "list",
				args:  `{}`,
				fake:  fake{exec: ok("  dev\n* main\n", "", 0)},
				want:  "  dev\n* main",
				calls: []call{gitCall("-C /workspace branch --list", 60)},
			},
			{
				name:  "create",
				args:  `{"name":"fix/bug-12"}`,
				fake:  fake{exec: ok("", "", 0)},
				want:  "Created branch fix/bug-12",
				calls: []call{gitCall("-C /workspace branch fix/bug-12", 60)},
			},
			{name: "bad name", args: `{"name":"x.lock"}`, want: `Error: name "x.lock" is not a valid git name (letters, digits and . _ / + -, not starting with - or ending in / . or .lock)`},
		})
	})
	t.Run("git_checkout", func(t *testing.T) {
		runTool(t, "git_checkout", []toolCase{
			{
				name:  "revision",
				args:  `{"ref":"HEAD^"}`,
				fake:  fake{exec: ok("", "HEAD is now at 1a2b3c4 x\n", 0)},
				want:  "HEAD is now at 1a2b3c4 x",
				calls: []call{gitCall("-C /workspace checkout 'HEAD^' --", 60)},
			},
			{
				name:  "create",
				args:  `{"ref":"feat","create":true}`,
				fake:  fake{exec: ok("", "", 0)},
				want:  "Switched to feat",
				calls: []call{gitCall("-C /workspace checkout -b feat", 60)},
			},
			{name: "no ref", args: `{}`, want: "Error: ref must name a branch, tag or commit"},
			{name: "create with a revision", args: `{"ref":"HEAD~1","create":true}`, want: `Error: ref "HEAD~1" is not a valid git name (letters, digits and . _ / + -, not starting with - or ending in / . or .lock)`},
			{name: "option ref", args: `{"ref":"--orphan=x"}`, want: `Error: ref "--orphan=x" is not a valid git name (letters, digits and . _ / + -, not starting with - or ending in / . or .lock)`},
		})
	})
}

var createRE = regexp.MustCompile(`^umask 077 && set -C && : > (/tmp/boxkite-git-cred-[0-9a-f]{32})$`)

// TestGitCredentials follows a credential through a network git tool: a
// fresh 0600 file under /tmp, filled by WriteFile, named by path only on the
// git command line, and removed at the end whatever happened.
func TestGitCredentials(t *testing.T) {
	const token = "tok3n-value-xyz"
	const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
	tokenFile := "[http]\n\textraHeader = Authorization: Basic " + basicAuth(token) + "\n"
	sshOpt := "-c 'core.sshCommand=ssh -i {cred} -o IdentitiesOnly=yes -o StrictHostKeyChecking=accept-new -o BatchMode=yes'"
	tests := []struct {
		name     string
		tool     string
		args     string
		git      func() (*api.ExecResult, error) // nil: git must not run
		create   int                             // exit code of the create command
		writeErr error
		rmCode   int
		canceled bool
		wantFile string // content written
		wantGit  string // the git command, {cred} for the file
		want     string // the text, {cred} for the file
	}{
		{
			name: "clone with a token", tool: "git_clone",
			args:     `{"url":"https://github.com/o/private.git","token":"` + token + `"}`,
			git:      func() (*api.ExecResult, error) { return &api.ExecResult{}, nil },
			wantFile: tokenFile,
			wantGit:  "clone --no-local -- https://github.com/o/private.git /workspace/repo",
			want:     "Cloned https://github.com/o/private.git into /workspace/repo",
		},
		{
			name: "failing git echoes the token", tool: "git_pull",
			args: `{"token":"` + token + `"}`,
			git: func() (*api.ExecResult, error) {
				return &api.ExecResult{ExitCode: 128, Stderr: "remote: token " + token + " (" + basicAuth(token) + ") is invalid\nfatal: Authentication failed\n"}, nil
			},
			wantFile: tokenFile,
			wantGit:  "-C /workspace pull origin",
			want:     "Error (exit code 128):\nremote: token [REDACTED_SECRET] ([REDACTED_SECRET]) is invalid\nfatal: Authentication failed\n\nHint: the remote wants credentials; pass token (HTTPS) or ssh_key (SSH).",
		},
		{
			name: "push with an ssh key", tool: "git_push",
			args: `{"branch":"main","ssh_key":` + jsonString(key) + `}`,
			git: func() (*api.ExecResult, error) {
				return &api.ExecResult{Stderr: "To github.com:o/r.git\n   1a2b..3c4d  main -> main\n"}, nil
			},
			wantFile: key + "\n",
			wantGit:  sshOpt + " -C /workspace push origin main",
			want:     "To github.com:o/r.git\n   1a2b..3c4d  main -> main",
		},
		{
			name: "git transport failure", tool: "git_push",
			args:     `{"token":"` + token + `"}`,
			git:      func() (*api.ExecResult, error) { return nil, errors.New("connection reset") },
			wantFile: tokenFile,
			wantGit:  "-C /workspace push origin",
			want:     "Error: could not reach the sandbox (connection reset)",
		},
		{
			name: "write refused", tool: "git_clone",
			args:     `{"url":"https://github.com/o/r","token":"` + token + `"}`,
			writeErr: apiErr(http.StatusInsufficientStorage, api.CodeSandboxFailed, "no space left on device", ""),
			wantFile: tokenFile,
			want:     "Error [sandbox_operation_failed]: no space left on device",
		},
		{
			name: "create refused", tool: "git_clone",
			args:   `{"url":"https://github.com/o/r","token":"` + token + `"}`,
			create: 1,
			want:   "Error: could not create a credential file in /tmp:\nsh: cannot create: File exists",
		},
		{
			name: "remove fails", tool: "git_clone",
			args:     `{"url":"https://github.com/o/r","token":"` + token + `"}`,
			git:      func() (*api.ExecResult, error) { return &api.ExecResult{}, nil },
			rmCode:   1,
			wantFile: tokenFile,
			wantGit:  "clone --no-local -- https://github.com/o/r /workspace/repo",
			want:     "Cloned https://github.com/o/r into /workspace/repo\n\nWarning: could not remove the credential file {cred}; remove it with: rm -f {cred}",
		},
		{
			name: "canceled context still cleans up", tool: "git_clone",
			args:     `{"url":"https://github.com/o/r","token":"` + token + `"}`,
			canceled: true,
			git:      func() (*api.ExecResult, error) { return nil, context.Canceled },
			wantFile: tokenFile,
			wantGit:  "clone --no-local -- https://github.com/o/r /workspace/repo",
			want:     "Error: the call was canceled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			f.exec = func(r api.ExecRequest) (*api.ExecResult, error) {
				switch {
				case strings.HasPrefix(r.Command, "umask"):
					if tt.create != 0 {
						return &api.ExecResult{ExitCode: tt.create, Stderr: "sh: cannot create: File exists\n"}, nil
					}
					return &api.ExecResult{}, nil
				case strings.HasPrefix(r.Command, "rm "):
					return &api.ExecResult{ExitCode: tt.rmCode}, nil
				case tt.git != nil:
					return tt.git()
				}
				return nil, errUnexpected
			}
			f.writeFile = func(r api.FileCreateRequest) (*api.FileCreateResult, error) {
				if tt.writeErr != nil {
					return nil, tt.writeErr
				}
				return &api.FileCreateResult{Path: r.Path, Size: int64(len(r.Content))}, nil
			}
			ctx := context.Background()
			if tt.canceled {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			got := Call(ctx, Git(), f, tt.tool, json.RawMessage(tt.args))

			if len(f.calls) == 0 {
				t.Fatalf("%s made no calls", tt.tool)
			}
			first, _ := f.calls[0].Req.(api.ExecRequest)
			m := createRE.FindStringSubmatch(first.Command)
			if m == nil {
				t.Fatalf("first call = %+v, want a 0600 create under /tmp matching %s", f.calls[0], createRE)
			}
			cred := m[1]
			sub := func(s string) string { return strings.ReplaceAll(s, "{cred}", cred) }

			want := []call{{"Exec", api.ExecRequest{Command: "umask 077 && set -C && : > " + cred, Timeout: 30, Description: "create a private git credential file"}}}
			if tt.create == 0 {
				want = append(want, call{"WriteFile", api.FileCreateRequest{Path: cred, Content: tt.wantFile}})
			}
			if tt.wantGit != "" && tt.writeErr == nil {
				cmd := tt.wantGit
				if !strings.HasPrefix(cmd, "-c 'core.sshCommand") {
					cmd = "-c include.path=" + cred + " " + cmd
				}
				want = append(want, gitCall(sub(cmd), gitNetTimeout))
			}
			want = append(want, call{"Exec", api.ExecRequest{Command: "rm -f -- " + cred, Timeout: 30, Description: "remove the git credential file"}})
			if diff := cmp.Diff(want, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if got != sub(tt.want) {
				t.Errorf("text:\n%s\nwant:\n%s", got, sub(tt.want))
			}
			if last := f.execCtxs[len(f.execCtxs)-1]; last != nil {
				t.Errorf("the credential file was removed with a dead context: %v", last)
			}
			// The secret reaches the sandbox only as file content.
			secrets := []string{token, basicAuth(token), "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"}
			for _, c := range f.calls {
				r, ok := c.Req.(api.ExecRequest)
				if !ok {
					continue
				}
				blob := r.Command + r.Description + r.Stdin + r.Cwd + fmtEnv(r.Env)
				for _, s := range secrets {
					if strings.Contains(blob, s) {
						t.Errorf("secret %q reached an exec request: %+v", s, r)
					}
				}
			}
			for _, s := range secrets {
				if strings.Contains(got, s) {
					t.Errorf("secret %q in the text: %s", s, got)
				}
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func fmtEnv(env map[string]string) string {
	var b strings.Builder
	for k, v := range env {
		b.WriteString(k + "=" + v + "\n")
	}
	return b.String()
}
