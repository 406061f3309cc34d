package sidecar

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// needDash fails a test of the direct path where /bin/sh is not dash: the
// path is then never taken, and a comparison with sh would prove nothing.
func needDash(t testing.TB) {
	t.Helper()
	if !shIsDashAt("/bin/sh") {
		t.Fatal("/bin/sh is not dash: the direct exec path (direct.go) is only taken beside dash")
	}
}

// shAndDirect serves two Handlers for opts over one workspace: one that
// runs every command through /bin/sh -c, and one that may skip it.
func shAndDirect(t *testing.T, opts Options) (sh, direct *httptest.Server, hd *Handler) {
	t.Helper()
	hs := New(opts)
	hs.shIsDash = func() bool { return false }
	hd = New(opts)
	sh, direct = serve(t, hs), serve(t, hd)
	return sh, direct, hd
}

// directWorkspace is a workspace holding the programs the comparisons run.
func directWorkspace(t *testing.T) string {
	t.Helper()
	ws := traversableTempDir(t)
	files := map[string]struct {
		mode    os.FileMode
		content string
	}{
		"noexec":     {0o644, "echo not executable\n"},
		"noshebang":  {0o755, "echo from a script without '#!': $0 $# $*\n"},
		"killself":   {0o755, "#!/bin/sh\nulimit -c 0\nkill -$1 $$\n"},
		"args":       {0o755, "#!/bin/sh\nprintf '[%s]' \"$0\" \"$@\"; echo\n"},
		"parent":     {0o755, "#!/bin/sh\ncat /proc/$PPID/comm\n"},
		"badinterp":  {0o755, "#!/nonexistent/interpreter\n"},
		"bg":         {0o755, "#!/bin/sh\nsleep 60 & echo $! > bg.pid; echo started\n"},
		"sub/inside": {0o755, "#!/bin/sh\necho inside\n"},
	}
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(ws, name), f.mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestDirectExecMatchesShell runs each command through /bin/sh -c and
// directly, and wants the same answer: exit code, stdout (the environment
// as a set: dash orders it by its hash table), stderr and output counts.
// tries says whether the direct path is taken at all.
func TestDirectExecMatchesShell(t *testing.T) {
	t.Parallel()
	needDash(t)
	ws := directWorkspace(t)
	sh, direct, hd := shAndDirect(t, Options{Token: testToken, Workspace: ws})
	type tc struct {
		req   api.ExecRequest
		tries bool
	}
	tests := []tc{
		{api.ExecRequest{Command: "true"}, true},
		{api.ExecRequest{Command: "false"}, true},
		{api.ExecRequest{Command: "  true\t"}, true},
		{api.ExecRequest{Command: "true --help"}, false},
		{api.ExecRequest{Command: "false --version"}, false},
		{api.ExecRequest{Command: "echo -n a"}, false},
		{api.ExecRequest{Command: "pwd"}, false},
		{api.ExecRequest{Command: "ls"}, true},
		{api.ExecRequest{Command: "ls -a sub"}, true},
		{api.ExecRequest{Command: "ls /nonexistent-boxkite"}, true},
		{api.ExecRequest{Command: "env"}, true},
		{api.ExecRequest{Command: "/usr/bin/env"}, true},
		{api.ExecRequest{Command: "env", Cwd: "sub"}, true},
		{api.ExecRequest{Command: "env", Cwd: "link"}, true},
		{api.ExecRequest{Command: "env", Cwd: "/tmp"}, true},
		{api.ExecRequest{Command: "/bin/pwd -L", Cwd: "link"}, true},
		{api.ExecRequest{Command: "/bin/pwd -P", Cwd: "link"}, true},
		{api.ExecRequest{Command: "env", Env: map[string]string{"FOO": "a b\nc", "_x": "", "HOME": "/tmp"}}, true},
		{api.ExecRequest{Command: "env", Env: map[string]string{"PWD": "/"}}, false},
		{api.ExecRequest{Command: "env", Env: map[string]string{"PWD": ws}}, false},
		{api.ExecRequest{Command: "env", Env: map[string]string{"PPID": "1"}}, false},
		{api.ExecRequest{Command: "env", Env: map[string]string{"OPTIND": "3"}}, false},
		{api.ExecRequest{Command: "printenv SHLVL OLDPWD LINENO"}, true},
		{api.ExecRequest{Command: "id -u"}, true},
		{api.ExecRequest{Command: "cat", Stdin: "hello\n"}, true},
		{api.ExecRequest{Command: "head -c 3", Stdin: "hello"}, true},
		{api.ExecRequest{Command: "cat"}, true},
		{api.ExecRequest{Command: "expr 2 + 3"}, true},
		{api.ExecRequest{Command: "seq -s , 1 5"}, true},
		{api.ExecRequest{Command: "date -u -d @0 +%Y-%m-%d"}, true},
		{api.ExecRequest{Command: "./args a,b c:d e=f +g @h %i -j .k /l"}, true},
		{api.ExecRequest{Command: "sub/inside"}, true},
		{api.ExecRequest{Command: "inside"}, false}, // not on PATH: dash's "not found"
		{api.ExecRequest{Command: "nonexistent-boxkite-command"}, false},
		{api.ExecRequest{Command: "nonexistent-boxkite-command with args"}, false},
		{api.ExecRequest{Command: "/nonexistent-boxkite/prog"}, true},
		{api.ExecRequest{Command: "./nonexistent"}, true},
		{api.ExecRequest{Command: "./noexec"}, true},
		{api.ExecRequest{Command: "./noshebang a b"}, true},
		{api.ExecRequest{Command: "./badinterp"}, true},
		{api.ExecRequest{Command: "./sub"}, true},
		{api.ExecRequest{Command: "sub"}, false},
		{api.ExecRequest{Command: "a=b env"}, false},
		{api.ExecRequest{Command: "ls *"}, false},
		{api.ExecRequest{Command: "head -c 3000 /dev/zero", MaxOutputBytes: 1000}, true},
		// yes, not a bounded writer: one that finishes before the stop's
		// kill lands would exit 0 on one side and 137 on the other.
		{api.ExecRequest{Command: "yes", MaxOutputBytes: 1000, OnOutputLimit: api.OutputLimitStop}, true},
		{api.ExecRequest{Command: "sleep 30", Timeout: 1}, true},
	}
	for sig := 1; sig <= 64; sig++ {
		switch syscall.Signal(sig) {
		case syscall.SIGCHLD, syscall.SIGCONT, syscall.SIGURG, syscall.SIGWINCH, // ignored
			syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU: // stop: the exec would wait out its timeout
			continue
		}
		tests = append(tests, tc{api.ExecRequest{Command: "./killself " + strconv.Itoa(sig)}, true})
	}
	for _, tt := range tests {
		t.Run(tt.req.Command, func(t *testing.T) {
			t.Parallel()
			spec, err := hd.execSpec(execRequest{ExecRequest: tt.req})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := hd.direct(spec); ok != tt.tries {
				t.Errorf("direct path taken = %v, want %v", ok, tt.tries)
			}
			want := postExec(t, sh.URL, jsonBody(t, tt.req))
			got := postExec(t, direct.URL, jsonBody(t, tt.req))
			if strings.HasSuffix(tt.req.Command, "env") {
				want.Stdout, got.Stdout = sortedLines(want.Stdout), sortedLines(got.Stdout)
			}
			want.DurationMS, got.DurationMS = 0, 0
			if tt.req.OnOutputLimit == api.OutputLimitStop {
				// How much a killed writer got into the pipe past the
				// limit is timing, not the path taken.
				want.StdoutBytes, got.StdoutBytes = 0, 0
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("exec %q through sh (-) and direct (+):\n%s", tt.req.Command, diff)
			}
		})
	}
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestDirectExecSkipsTheShell: a plain command's parent is the sidecar,
// not sh (one exec fewer), and dash's fallback and signal note reach a
// streamed exec too.
func TestDirectExecSkipsTheShell(t *testing.T) {
	t.Parallel()
	needDash(t)
	ws := directWorkspace(t)
	sh, direct, _ := shAndDirect(t, Options{Token: testToken, Workspace: ws})
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		url, want string
	}{{sh.URL, "sh\n"}, {direct.URL, string(self)}} {
		if got := postExec(t, tt.url, `{"command":"./parent"}`); got.Stdout != tt.want {
			t.Errorf("parent of ./parent = %q, want %q", got.Stdout, tt.want)
		}
	}
	for _, cmd := range []string{"./killself SEGV", "nonexistent-boxkite-command", "./noexec", "cat"} {
		body := jsonBody(t, api.ExecRequest{Command: cmd, Stdin: "in"})
		want, got := postStream(t, sh.URL, body), postStream(t, direct.URL, body)
		if diff := cmp.Diff(eventsOnly(want), eventsOnly(got)); diff != "" {
			t.Errorf("streamed exec %q through sh (-) and direct (+):\n%s", cmd, diff)
		}
	}
}

// eventsOnly is events without their timing, a stream's output in one
// event: how it is cut into reads is the pipe's, not the command's.
func eventsOnly(events []event) []api.ExecEvent {
	var out []api.ExecEvent
	for _, e := range byStreamEvents(events) {
		e.DurationMS = 0
		if n := len(out); n > 0 && e.Type != api.EventExit && out[n-1].Type == e.Type {
			out[n-1].Data += e.Data
			continue
		}
		out = append(out, e)
	}
	return out
}

func byStreamEvents(events []event) []api.ExecEvent {
	var out []api.ExecEvent
	for _, e := range events {
		out = append(out, e.ExecEvent)
	}
	return byStream(out)
}

// TestDirectExecGroup: a direct command leads its own process group, which
// the end of the exec kills as it kills sh's: a background child left
// holding the pipes, and everything once the client is gone.
func TestDirectExecGroup(t *testing.T) {
	t.Parallel()
	needDash(t)
	ws := directWorkspace(t)
	_, direct, _ := shAndDirect(t, Options{Token: testToken, Workspace: ws})
	if got := postExec(t, direct.URL, `{"command":"./bg"}`); got.Stdout != "started\n" || got.ExitCode != 0 {
		t.Errorf("./bg = %+v", got)
	}
	waitGone(t, readPID(t, filepath.Join(ws, "bg.pid")))

	if err := os.Remove(filepath.Join(ws, "bg.pid")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "bg"), []byte("#!/bin/sh\nsleep 60 & echo $! > bg.pid; wait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	clientGoneKills(t, direct.URL, `{"command":"./bg"}`, filepath.Join(ws, "bg.pid"))
}

// TestDirectExecRunAs: the direct command drops to the sandbox user as
// sh did, and its files are the user's.
func TestDirectExecRunAs(t *testing.T) {
	t.Parallel()
	needDash(t)
	for _, nested := range []bool{false, true} {
		t.Run("nested="+strconv.FormatBool(nested), func(t *testing.T) {
			t.Parallel()
			if !nested {
				needRoot(t, "switching to uid 1001")
			}
			ws := directWorkspace(t)
			sh, direct, _ := shAndDirect(t, Options{Token: testToken, Workspace: ws, RunAs: &RunAs{UID: 1001, GID: 1001, NestedUserNS: nested}})
			for _, cmd := range []string{"id", "env", "touch made", "./noexec", "nonexistent-boxkite-command", "./killself TERM"} {
				body := jsonBody(t, api.ExecRequest{Command: cmd})
				want, got := postExec(t, sh.URL, body), postExec(t, direct.URL, body)
				if cmd == "env" {
					want.Stdout, got.Stdout = sortedLines(want.Stdout), sortedLines(got.Stdout)
				}
				want.DurationMS, got.DurationMS = 0, 0
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("exec %q through sh (-) and direct (+):\n%s", cmd, diff)
				}
			}
			fi, err := os.Stat(filepath.Join(ws, "made"))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); !nested && (st.Uid != 1001 || st.Gid != 1001) {
				t.Errorf("file made by the command is owned by %d:%d, want 1001:1001", st.Uid, st.Gid)
			}
		})
	}
}

// TestPlainWordsBuiltins: no word dash runs itself, as a builtin or a
// reserved word, passes for a program; only true and false alone, which
// the table above shows answer as the builtins do. The names are dash's
// own list, bash's, and every program on this machine's PATH.
func TestPlainWordsBuiltins(t *testing.T) {
	t.Parallel()
	needDash(t)
	names := []string{
		"alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec",
		"exit", "export", "false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf",
		"pwd", "read", "readonly", "return", "set", "shift", "test", "times", "trap", "true", "type",
		"ulimit", "umask", "unalias", "unset", "wait", "case", "do", "done", "elif", "else", "esac",
		"fi", "for", "if", "in", "then", "until", "while", "function", "select", "time", ".", ":",
		"builtin", "declare", "enable", "help", "let", "source", "typeset", "history", "shopt",
	}
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	// One dash says what each name is to it.
	cmd := exec.Command("/bin/sh", "-c", `for n do command -V "$n" 2>&1 || true; done`, "sh")
	cmd.Args = append(cmd.Args, names...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(names) {
		t.Fatalf("dash described %d names of %d", len(lines), len(names))
	}
	builtins := 0
	for i, line := range lines {
		own := strings.Contains(line, "builtin") || strings.Contains(line, "keyword") ||
			strings.Contains(line, "alias") || strings.Contains(line, "function")
		if !own {
			continue
		}
		builtins++
		if plainWords(names[i]) != nil && names[i] != "true" && names[i] != "false" {
			t.Errorf("plainWords(%q) accepts what dash says %q", names[i], line)
		}
		if plainWords(names[i]+" x") != nil {
			t.Errorf("plainWords(%q) accepts what dash says %q", names[i]+" x", line)
		}
	}
	if builtins < 30 {
		t.Errorf("dash named %d builtins and keywords, want dash's whole list", builtins)
	}
}

func TestPlainWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"ls", []string{"ls"}},
		{" ls  -l\t/tmp ", []string{"ls", "-l", "/tmp"}},
		{"python3 -m http.server 8000", []string{"python3", "-m", "http.server", "8000"}},
		{"git log --format=%H -n 1", []string{"git", "log", "--format=%H", "-n", "1"}},
		{"./run.sh a,b c:d +e @f", []string{"./run.sh", "a,b", "c:d", "+e", "@f"}},
		{"true", []string{"true"}},
		{"false", []string{"false"}},
		{"", nil},
		{"   ", nil},
		{"true x", nil},
		{"echo hi", nil},
		{"cd /", nil},
		{"exec ls", nil},
		{"if", nil},
		{"A=1 ls", nil},
		{"A=1", nil},
		{"ls; ls", nil},
		{"ls && ls", nil},
		{"ls | wc", nil},
		{"ls > f", nil},
		{"ls 2>f", nil},
		{"ls <f", nil},
		{"ls &", nil},
		{"(ls)", nil},
		{"ls $HOME", nil},
		{"ls ${HOME}", nil},
		{"ls `pwd`", nil},
		{"ls 'a b'", nil},
		{`ls "a b"`, nil},
		{`ls a\ b`, nil},
		{"ls *.go", nil},
		{"ls ?", nil},
		{"ls [ab]", nil},
		{"ls {a,b}", nil},
		{"ls ~", nil},
		{"ls ~/x", nil},
		{"ls # comment", nil},
		{"ls\nls", nil},
		{"ls\r", nil},
		{"! ls", nil},
		{"ls é", nil},
		{"ls\x00", nil},
	}
	for _, tt := range tests {
		if got := plainWords(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("plainWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzPlainWords: whatever plainWords accepts, dash splits into the same
// words, expanding nothing, and does not run its first word itself.
func FuzzPlainWords(f *testing.F) {
	needDash(f)
	for _, s := range []string{
		"ls -l", "a=b c", "x y=z", "%1", "a:b", "~x", "-", "--", "a\tb", "ls .", "ls ..", "@", "+x",
		"echo", "ls *", "f(){ :;}", "ls #x", "cmd,x", "x=", "=x", "a%b", "1 2 3", "ls/ x", "/bin/ls",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := plainWords(s)
		if words == nil {
			return
		}
		// A function prints the words it is given, so the first word of s
		// is an argument too; a second dash says what that word is to it.
		out, err := exec.Command("/bin/sh", "-c", `f() { printf '%s\0' "$@"; }; f `+s+`; command -V "$1" 2>&1 || true`, "sh", words[0]).Output()
		if err != nil {
			t.Fatalf("sh on %q: %v", s, err)
		}
		// The words end at the last NUL; command -V's answer follows.
		i := strings.LastIndexByte(string(out), 0)
		if i < 0 {
			t.Fatalf("sh on %q printed no word: %q", s, out)
		}
		split, what := string(out[:i+1]), string(out[i+1:])
		got := strings.Split(strings.TrimSuffix(split, "\x00"), "\x00")
		if !slices.Equal(got, words) {
			t.Errorf("plainWords(%q) = %q, sh splits %q", s, words, got)
		}
		if words[0] != "true" && words[0] != "false" &&
			(strings.Contains(what, "builtin") || strings.Contains(what, "keyword") || strings.Contains(what, "alias")) {
			t.Errorf("plainWords(%q) accepts %q, which sh runs itself: %q", s, words[0], what)
		}
	})
}
