package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/cli"
	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
	"github.com/boxkite/boxkite/handoff/handofftest"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestHandoff hands each fixture session into a real sandbox through the
// CLI and checks inside it (issue 11, acceptance 2 and 3): the session
// files sit where the tool resumes from, their cwd fields name the
// sandbox's working directory, the tree is the source's byte for byte,
// and no credential value reaches the audit log, the server's log or any
// process's argv while the handoff and the resume script run.
func TestHandoff(t *testing.T) {
	var serverLog syncBuffer
	s := servertest.New(t, servertest.WithLogger(slog.New(slog.NewTextHandler(&serverLog, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	fx := handofftest.Install(t)
	claudeKey := fmt.Sprintf("sk-ant-test-%d", time.Now().UnixNano())
	geminiKey := fmt.Sprintf("gemini-test-%d", time.Now().UnixNano())
	for _, kv := range [][2]string{
		{"HOME", fx.Home},
		{"BOXKITE_HOME", t.TempDir()},
		{"BOXKITE_URL", s.BaseURL},
		{"BOXKITE_API_KEY", s.APIKey},
		{"BOXKITE_OPENCODE", fx.Opencode},
		{"ANTHROPIC_API_KEY", claudeKey},
		{"CLAUDE_CODE_OAUTH_TOKEN", ""},
		{"CLAUDE_CONFIG_DIR", ""},
		{"CODEX_HOME", ""},
		{"OPENAI_API_KEY", ""},
		{"CODEX_API_KEY", ""},
		{"CODEX_ACCESS_TOKEN", ""},
		{"XDG_DATA_HOME", ""},
		{"NO_COLOR", "1"},
	} {
		t.Setenv(kv[0], kv[1])
	}
	t.Chdir(fx.Src)
	secrets := []string{claudeKey, geminiKey}
	for _, v := range fx.Secrets {
		secrets = append(secrets, v)
	}
	scan := scanArgv(t, secrets)
	scan.selfTest(t)
	c := &client.Client{BaseURL: s.BaseURL, APIKey: s.APIKey}

	tests := []struct {
		tool     string
		attach   bool   // let the CLI attach; else --no-attach and the test types the line
		credVar  string // the variable the sourced file must set
		credLen  int
		sessions func(workdir string) []sessionCheck
	}{
		{"claude-code", true, "ANTHROPIC_API_KEY", len(claudeKey), func(wd string) []sessionCheck {
			return []sessionCheck{{
				path:  "/workspace/.claude/projects/" + handofftest.EncodeClaude(wd) + "/" + handofftest.ClaudeSession + ".jsonl",
				lines: true, cwd: [][]string{{"cwd"}},
			}, {
				path:  "/workspace/.claude/projects/" + handofftest.EncodeClaude(wd) + "/" + handofftest.ClaudeSession + "/tool-results/toolu_1.txt",
				lines: false,
			}}
		}},
		{"codex", false, "OPENAI_API_KEY", len(fx.Secrets["codex-auth"]), func(string) []sessionCheck {
			return []sessionCheck{{
				path:  "/workspace/.codex/sessions/2026/02/23/rollout-2026-02-23T12-54-34-" + handofftest.CodexSession + ".jsonl",
				lines: true, cwd: [][]string{{"payload", "cwd"}, {"payload", "workspace_roots", "[]"}}, only: `"type":"turn_context"`,
			}}
		}},
		{"gemini", true, "GEMINI_API_KEY", 0, func(string) []sessionCheck {
			return []sessionCheck{{
				path:  "/workspace/.gemini/tmp/my-app-v2/chats/session-2026-09-01T10-00-3c9d1e2f.jsonl",
				lines: true, cwd: [][]string{{"directories", "[]"}, {"$set", "directories", "[]"}},
			}}
		}},
		{"opencode", true, "OPENCODE_AUTH_CONTENT", 0, func(string) []sessionCheck {
			return []sessionCheck{{
				path: "/workspace/.opencode-handoff/" + handofftest.OpencodeSession + ".json",
				cwd:  [][]string{{"info", "directory"}, {"messages", "[]", "info", "path", "cwd"}},
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ctx := context.Background()
			args := []string{"handoff", tt.tool}
			if !tt.attach {
				args = append(args, "--no-attach", "--json")
			}
			stdout, stderr, code := runBoxkite(args...)
			if code != 0 {
				t.Fatalf("boxkite %v: exit %d\n%s", args, code, stderr)
			}
			id, run := handoffOutput(t, tt.attach, stdout, stderr)
			if !tt.attach {
				typeInto(t, c, id, run, tt.credVar, tt.credLen)
			}
			// The sourced script removes the credentials directory first.
			waitFor(t, "the resume script to run", func() bool {
				res, err := c.Exec(ctx, id, api.ExecRequest{Command: "ls -a /tmp"})
				return err == nil && !strings.Contains(res.Stdout, ".boxkite-handoff-")
			})

			workdir := "/workspace/my_app.v2"
			if tt.tool == "codex" {
				workdir += "/sub" // the newest turn ran there
			}
			for _, sc := range tt.sessions(workdir) {
				sc.check(t, c, id, fx.Src, workdir)
			}
			checkTree(t, c, id, fx)
			checkAudit(t, c, id, secrets)
		})
	}
	scan.stop(t)
	for _, v := range secrets {
		if strings.Contains(serverLog.String(), v) {
			t.Errorf("the server's log holds a credential value")
		}
	}
}

// runBoxkite runs the CLI in-process. Its output buffers are locked: an
// attachment's relay may still be copying the terminal's last bytes when
// the command returns.
func runBoxkite(args ...string) (string, string, int) {
	var out, errOut syncBuffer
	stdio := cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := cli.Execute(context.Background(), cli.NewRoot(cli.NewApp(stdio, "test")), args)
	return out.String(), errOut.String(), code
}

var createdRE = regexp.MustCompile(`created sandbox (\S+)`)

// handoffOutput finds the sandbox id and the run line in the CLI's output.
func handoffOutput(t *testing.T, attached bool, stdout, stderr string) (string, string) {
	t.Helper()
	if attached {
		m := createdRE.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no sandbox named in %q", stderr)
		}
		return m[1], ""
	}
	var res struct {
		Sandbox api.Sandbox `json:"sandbox"`
		Run     string      `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("decode %q: %v", stdout, err)
	}
	if !strings.HasPrefix(res.Run, ". /tmp/.boxkite-handoff-") {
		t.Fatalf("run line %q", res.Run)
	}
	return res.Sandbox.ID, res.Run
}

// typeInto attaches, types the run line, and asks the shell for the length
// of the sourced credential, which proves the variable is set without
// printing it.
func typeInto(t *testing.T, c *client.Client, id, run, name string, n int) {
	t.Helper()
	term, err := c.Attach(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	want := fmt.Sprintf("len=%d.", n)
	if _, err := io.WriteString(term, " "+run+"\rprintf 'len=%s.\\n' \"${#"+name+"}\"\r"); err != nil {
		t.Fatal(err)
	}
	var seen bytes.Buffer
	buf := make([]byte, 4096)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(seen.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the shell never printed %q; it printed %q", want, seen.String())
		}
		k, err := term.Read(buf)
		seen.Write(buf[:k])
		if err != nil {
			t.Fatalf("read the terminal: %v (saw %q)", err, seen.String())
		}
	}
}

// sessionCheck is one session file to check in the sandbox.
type sessionCheck struct {
	path  string
	lines bool       // JSONL (else one JSON document, or raw when cwd is nil)
	cwd   [][]string // key paths whose string values must name the sandbox's directories
	only  string     // check only the lines containing this (record types the tool reads the cwd of)
}

func (sc sessionCheck) check(t *testing.T, c *client.Client, id, src, workdir string) {
	t.Helper()
	ctx := context.Background()
	res, err := c.Exec(ctx, id, api.ExecRequest{Command: "stat -c '%a %Y' " + sc.path + " && cd " + workdir + " && pwd -P"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("stat %s: %v %+v", sc.path, err, res)
	}
	var mode string
	var mtime int64
	var pwd string
	fmt.Sscanf(res.Stdout, "%s %d\n%s", &mode, &mtime, &pwd)
	if mode != "600" {
		t.Errorf("%s has mode %s, want 600", sc.path, mode)
	}
	if age := time.Since(time.Unix(mtime, 0)); age > 10*time.Minute {
		t.Errorf("%s is %v old; want it dated at the handoff", sc.path, age)
	}
	if pwd != workdir {
		t.Errorf("the working directory resolves to %q, want %q (Claude Code encodes the real path)", pwd, workdir)
	}
	b := download(t, c, id, sc.path)
	if len(sc.cwd) == 0 {
		return
	}
	docs := [][]byte{b}
	if sc.lines {
		docs = bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	}
	found := 0
	for _, d := range docs {
		if sc.only != "" && !bytes.Contains(d, []byte(sc.only)) {
			continue
		}
		if !json.Valid(d) {
			t.Errorf("%s holds a line that is not JSON: %.80q", sc.path, d)
			continue
		}
		for _, p := range sc.cwd {
			for _, v := range stringsAt(t, d, p) {
				found++
				if v != workdir && !strings.HasPrefix(v, "/workspace/my_app.v2") && v != src+"-old" {
					t.Errorf("%s: %v = %q, outside the sandbox's working tree", sc.path, p, v)
				}
			}
		}
	}
	if found == 0 {
		t.Errorf("%s: no cwd fields found", sc.path)
	}
}

// stringsAt returns every string value at key path p (with "[]" for any
// array element) of a JSON document.
func stringsAt(t *testing.T, doc []byte, p []string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	cur := []any{v}
	for _, k := range p {
		var next []any
		for _, x := range cur {
			switch x := x.(type) {
			case map[string]any:
				if y, ok := x[k]; ok && k != "[]" {
					next = append(next, y)
				}
			case []any:
				if k == "[]" {
					next = append(next, x...)
				}
			}
		}
		cur = next
	}
	var out []string
	for _, x := range cur {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func download(t *testing.T, c *client.Client, id, p string) []byte {
	t.Helper()
	d, err := c.DownloadFile(context.Background(), id, p)
	if err != nil {
		t.Fatalf("download %s: %v", p, err)
	}
	defer d.Close()
	b, err := io.ReadAll(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkTree compares the sandbox's copy of the project with the source:
// every file git keeps (ignored ones excluded, .git included) byte for
// byte with its mode, symlinks as symlinks.
func checkTree(t *testing.T, c *client.Client, id string, fx *handofftest.Fixture) {
	t.Helper()
	want, err := handoff.ListTree(context.Background(), fx.Src, false)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.DownloadArchive(context.Background(), id, "/workspace/my_app.v2")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := map[string]*tar.Header{}
	bodies := map[string][]byte{}
	tr := tar.NewReader(d)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(path.Clean(hdr.Name), "/")
		got[name] = hdr
		if bodies[name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range want.Entries {
		local := filepath.Join(fx.Src, filepath.FromSlash(rel))
		fi, err := os.Lstat(local)
		if err != nil {
			t.Fatal(err)
		}
		hdr, ok := got[rel]
		switch {
		case !ok:
			t.Errorf("the sandbox lacks %s", rel)
		case fi.Mode()&fs.ModeSymlink != 0:
			link, _ := os.Readlink(local)
			if hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != link {
				t.Errorf("%s is not the symlink to %s it was", rel, link)
			}
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(local)
			if !bytes.Equal(bodies[rel], b) {
				t.Errorf("%s differs from the source", rel)
			}
			if fs.FileMode(hdr.Mode).Perm() != fi.Mode().Perm() {
				t.Errorf("%s has mode %o, want %o", rel, hdr.Mode, fi.Mode().Perm())
			}
		}
	}
	for _, rel := range append([]string{"hosts"}, fx.Ignored...) {
		if _, ok := got[rel]; ok {
			t.Errorf("the sandbox has %s, which should have stayed behind", rel)
		}
	}
	if _, ok := got[".git/HEAD"]; !ok {
		t.Error("the sandbox lacks .git")
	}
}

// checkAudit reads the sandbox's whole audit log, once it holds both
// uploads and the end of the terminal session that typed the run line,
// and looks for the credential values in it.
func checkAudit(t *testing.T, c *client.Client, id string, secrets []string) {
	t.Helper()
	var all []byte
	defer func() {
		if t.Failed() {
			t.Logf("audit log: %s", all)
		}
	}()
	waitFor(t, "the audit log to record the uploads and the terminal session", func() bool {
		page, err := c.Log(context.Background(), id, api.MaxLogLimit, 0)
		if err != nil {
			return false
		}
		all, _ = json.Marshal(page)
		return bytes.Count(all, []byte(`"archive_upload"`)) == 2 && bytes.Contains(all, []byte(`"takeover_end"`))
	})
	for _, v := range secrets {
		if bytes.Contains(all, []byte(v)) {
			t.Errorf("the audit log holds a credential value")
		}
	}
}
