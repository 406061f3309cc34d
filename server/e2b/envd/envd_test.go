package envd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

// runShell runs what the sidecar would: /bin/sh -c command.
func runShell(t *testing.T, command string) string {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", command).CombinedOutput()
	if err != nil {
		t.Fatalf("sh -c %q: %v\n%s", command, err, out)
	}
	return string(out)
}

// TestShellCommand runs the command line built for a process through a
// real /bin/sh and checks the program got exactly its arguments and
// environment, whatever characters they hold.
func TestShellCommand(t *testing.T) {
	t.Parallel()
	tricky := []string{"", "a b", "it's", `"double"`, "$HOME", "`id`", "new\nline", "back\\slash", "-n", "*"}
	tests := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"no environment", nil, tricky},
		{"exported names", map[string]string{"A": "it's $x", "B_2": "new\nline", "_C": ""}, []string{"x"}},
		{"names sh cannot export", map[string]string{"A-B": "v w", "1X": "'", "OK": "fine"}, tricky[:3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The program prints its argv NUL-separated.
			script := `for a in "$0" "$@"; do printf '%s\0' "$a"; done`
			cfg := &process.ProcessConfig{Cmd: "/bin/sh", Args: append([]string{"-c", script, "zero"}, tt.args...)}
			command, err := shellCommand(cfg, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(runShell(t, command), "\x00"), "\x00")
			if diff := cmp.Diff(append([]string{"zero"}, tt.args...), got); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			// env, not a shell, prints the environment: a shell drops
			// variables whose names it cannot hold.
			command, err = shellCommand(&process.ProcessConfig{Cmd: "env", Args: []string{"-0"}}, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{}
			for kv := range strings.SplitSeq(runShell(t, command), "\x00") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					vars[k] = v
				}
			}
			for k, v := range tt.env {
				if got, ok := vars[k]; !ok || got != v {
					t.Errorf("variable %q = %q (set %v), want %q", k, got, ok, v)
				}
			}
		})
	}
	for _, bad := range []map[string]string{{"": "x"}, {"A=B": "x"}, {"A": "nul\x00"}} {
		if _, err := shellCommand(&process.ProcessConfig{Cmd: "true"}, bad); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("shellCommand with env %q: %v, want invalid_argument", bad, err)
		}
	}
}

func FuzzShellCommand(f *testing.F) {
	for _, s := range []string{"plain", "it's", "$(id)", "a\nb", `\`, "'\"'"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, arg, value string) {
		if strings.ContainsRune(arg, 0) || strings.ContainsRune(value, 0) {
			return
		}
		cfg := &process.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", `printf '%s|%s' "$1" "$V"`, "zero", arg}}
		command, err := shellCommand(cfg, map[string]string{"V": value})
		if err != nil {
			t.Fatal(err)
		}
		if got := runShell(t, command); got != arg+"|"+value {
			t.Errorf("round trip of %q, %q gave %q", arg, value, got)
		}
	})
}

func TestAllowlistCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		args []string
		want string
	}{
		{"/bin/bash", []string{"-l", "-c", "echo hi | wc -c"}, "echo hi | wc -c"},
		{"/bin/bash", []string{"-i", "-l"}, "/bin/bash -i -l"},
		{"python3", []string{"-c", "print(1)"}, "python3 -c print(1)"},
		{"sh", []string{"-c"}, "sh -c"},
	}
	for _, tt := range tests {
		if got := allowlistCommand(&process.ProcessConfig{Cmd: tt.cmd, Args: tt.args}); got != tt.want {
			t.Errorf("allowlistCommand(%s %q) = %q, want %q", tt.cmd, tt.args, got, tt.want)
		}
	}
}

// TestParseEntries lists a real directory with the scripts' find format
// and checks every field against lstat, as envd reports them: Mode the
// permission bits only (it was a whole Go FileMode, 2147484141 for a
// directory), Permissions Go's FileMode.String (find's for a symlink,
// setuid or sticky bits), the entries in WalkDir's order (by name, a
// directory's contents after it; find's were in directory order).
func TestParseEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file with\nnewline"), []byte("12345"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"sub", "sub/z", "sub/a", "sticky", "B"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "sticky"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "suid"), nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "suid"), 0o700|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"link": "sub", "flink": "file with\nnewline", "dead": "nowhere", "loop": "loop"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := runShell(t, "set -- "+shellQuote(dir)+" 2\n"+listScript)
	entries, err := parseEntries(Home, out)
	if err != nil {
		t.Fatal(err)
	}
	sortEntries(entries)
	var order []string
	for _, e := range entries {
		order = append(order, strings.TrimPrefix(e.GetPath(), dir+"/"))
	}
	if want := []string{"B", "dead", "file with\nnewline", "flink", "link", "loop", "sticky", "sub", "sub/a", "sub/z", "suid"}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	// a symlink as envd's: the type and mode of what it points to, its
	// resolved path as the target; one that dangles or loops no type,
	// mode 0 and its own path (it was type symlink, 0o777 and its text)
	want := map[string]struct {
		typ    filesystem.FileType
		mode   uint32
		target string
	}{
		"file with\nnewline": {filesystem.FileType_FILE_TYPE_FILE, 0o640, ""},
		"sub":                {filesystem.FileType_FILE_TYPE_DIRECTORY, 0o755, ""},
		"sticky":             {filesystem.FileType_FILE_TYPE_DIRECTORY, 0o777, ""},
		"suid":               {filesystem.FileType_FILE_TYPE_FILE, 0o700, ""},
		"link":               {filesystem.FileType_FILE_TYPE_DIRECTORY, 0o755, real + "/sub"},
		"flink":              {filesystem.FileType_FILE_TYPE_FILE, 0o640, real + "/file with\nnewline"},
		"dead":               {filesystem.FileType_FILE_TYPE_UNSPECIFIED, 0, dir + "/dead"},
		"loop":               {filesystem.FileType_FILE_TYPE_UNSPECIFIED, 0, dir + "/loop"},
	}
	for _, e := range entries {
		name := strings.TrimPrefix(e.GetPath(), dir+"/")
		w, ok := want[name]
		if !ok {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if e.GetType() != w.typ || e.GetMode() != w.mode || e.GetName() != name ||
			e.GetPermissions() != fi.Mode().String() || !e.GetModifiedTime().AsTime().Equal(fi.ModTime()) {
			t.Errorf("entry %q = %v; lstat mode %v mtime %v", name, e, fi.Mode(), fi.ModTime())
		}
		if name == "file with\nnewline" && e.GetSize() != 5 {
			t.Errorf("size %d, want 5", e.GetSize())
		}
		if e.GetSymlinkTarget() != w.target || (w.target == "") != (e.SymlinkTarget == nil) {
			t.Errorf("entry %q: symlink target %v, want %q", name, e.SymlinkTarget, w.target)
		}
	}
	// getInfo of a link describes it alike
	for name, w := range map[string]struct {
		typ    filesystem.FileType
		target string
	}{"link": {filesystem.FileType_FILE_TYPE_DIRECTORY, real + "/sub"}, "dead": {filesystem.FileType_FILE_TYPE_UNSPECIFIED, dir + "/dead"}} {
		e, err := oneEntry(Home, runShell(t, "set -- "+shellQuote(filepath.Join(dir, name))+"\n"+statScript))
		if err != nil || e.GetType() != w.typ || e.GetSymlinkTarget() != w.target {
			t.Errorf("stat of %s = %v, %v; want type %v, target %q", name, e, err, w.typ, w.target)
		}
	}
}

func FuzzParseEntries(f *testing.F) {
	f.Add("f\x005\x00644\x00u\x00g\x001.5\x00\x00/a\x00")
	f.Add("d\x000\x001777\x00u\x00g\x00x\x00\x00/a\x00")
	f.Add("")
	f.Add("l\x005\x00777\x00u\x00g\x001.5\x00x\x00./a\x00@links\x00./a\x00d 755\x00./x\x00")
	f.Fuzz(func(t *testing.T, out string) {
		entries, err := parseEntries(Home, out)
		if err == nil {
			for _, e := range entries {
				if e == nil {
					t.Fatal("nil entry without an error")
				}
			}
		}
	})
}

func TestAbsPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"": UserHome, "~": UserHome, "~/x": UserHome + "/x", "notes.txt": UserHome + "/notes.txt", "a/../b": UserHome + "/b",
		"/tmp/x": "/tmp/x", "/a/../../etc": "/etc", "//x//y/": "/x/y", "../up": "/home/up",
	} {
		if got := absPath(in); got != want {
			t.Errorf("absPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUserHome: /home/user, E2B's home, is the workspace in every file
// call and cwd (inSandbox), and answers name what was asked the way it
// was asked (asAsked): a list of /home/user gives /home/user/… paths.
// /home/user was outside the file roots, and its lookalikes stay apart.
func TestUserHome(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/home/user": Home, "/home/user/a.txt": Home + "/a.txt", "/home/user/d/e": Home + "/d/e",
		"/home/users": "/home/users", "/home/user2/x": "/home/user2/x", "/home": "/home", "/workspace/x": "/workspace/x", "/tmp/x": "/tmp/x",
	} {
		if got := inSandbox(in); got != want {
			t.Errorf("inSandbox(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tt := range []struct{ asked, p, want string }{
		{"/home/user", Home + "/a.txt", "/home/user/a.txt"},
		{"/home/user/d", Home + "/d", "/home/user/d"},
		{"/home/user", Home, "/home/user"},
		{"/home/user", "/tmp/x", "/tmp/x"},
		{"/home/user", "/workspaces/x", "/workspaces/x"},
		{"/workspace", Home + "/a.txt", "/workspace/a.txt"},
		{"/tmp", Home + "/a.txt", "/workspace/a.txt"},
	} {
		if got := asAsked(tt.asked, tt.p); got != tt.want {
			t.Errorf("asAsked(%q, %q) = %q, want %q", tt.asked, tt.p, got, tt.want)
		}
	}
	out := "d\x004096\x00755\x00sandbox\x00sandbox\x001.5\x00\x00./sub\x00"
	entries, err := parseEntries("/home/user", out)
	if err != nil || len(entries) != 1 || entries[0].GetPath() != "/home/user/sub" || entries[0].GetName() != "sub" {
		t.Errorf("parseEntries of ./sub asked as /home/user = %v, %v; want /home/user/sub", entries, err)
	}
}

func FuzzAbsPath(f *testing.F) {
	for _, s := range []string{"", "~", "a", "/a/../b", "../../x", "~/../.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := absPath(p)
		if !path.IsAbs(got) || path.Clean(got) != got {
			t.Errorf("absPath(%q) = %q, not absolute and clean", p, got)
		}
	})
}

func TestSignedURL(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	const token = "bxe2b_secret"
	q := func(p, user, exp string) url.Values {
		v := url.Values{"path": {p}, "signature": {signature(p, "write", user, token, exp)}}
		if user != "" {
			v.Set("username", user)
		}
		if exp != "" {
			v.Set("signature_expiration", exp)
		}
		return v
	}
	future, past := strconv.FormatInt(now.Unix()+60, 10), strconv.FormatInt(now.Unix()-1, 10)
	tests := []struct {
		name  string
		q     url.Values
		op    string
		token string
		want  bool
	}{
		{"valid", q("/workspace/a", "", ""), "write", token, true},
		{"valid with user and expiry", q("a.txt", "root", future), "write", token, true},
		{"expired", q("a.txt", "", past), "write", token, false},
		{"read with a write signature", q("a.txt", "", ""), "read", token, false},
		{"another sandbox's token", q("a.txt", "", ""), "write", "bxe2b_other", false},
		{"path changed", func() url.Values { v := q("a.txt", "", ""); v.Set("path", "b.txt"); return v }(), "write", token, false},
		{"expiry removed", func() url.Values { v := q("a.txt", "", future); v.Del("signature_expiration"); return v }(), "write", token, false},
		{"no signature", url.Values{"path": {"a"}}, "write", token, false},
	}
	for _, tt := range tests {
		if got := signedURLValid(tt.q, tt.op, tt.token, now); got != tt.want {
			t.Errorf("%s: signedURLValid = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	key := func(k string) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { return []byte(k), nil }
	}
	ctx := context.Background()
	a, b := NewTokens(key(strings.Repeat("a", 32))), NewTokens(key(strings.Repeat("b", 32)))
	const k1, k2 = "6f1c0a3e-0000-4000-8000-000000000001", "6f1c0a3e-0000-4000-8000-000000000002"
	t1, _ := a.Access(ctx, "sb1", k1)
	t1again, _ := a.Access(ctx, "sb1", k1)
	t2, _ := a.Access(ctx, "sb2", k1)
	tk2, _ := a.Access(ctx, "sb1", k2)
	tr, _ := a.Traffic(ctx, "sb1", k1)
	other, _ := b.Access(ctx, "sb1", k1)
	if t1 != t1again || t1 == t2 || t1 == tk2 || t1 == tr || t1 == other || !strings.HasPrefix(t1, "bxe2b."+k1+".") {
		t.Errorf("tokens: %q %q %q %q %q %q; want stable, distinct per sandbox, key, purpose and secret", t1, t1again, t2, tk2, tr, other)
	}
	tests := []struct {
		name, purpose, sandbox, token string
		wantKey                       string
		ok                            bool
	}{
		{"its own", purposeAccess, "sb1", t1, k1, true},
		{"another key's, also valid", purposeAccess, "sb1", tk2, k2, true},
		{"another sandbox's", purposeAccess, "sb2", t1, "", false},
		{"the traffic token as access", purposeAccess, "sb1", tr, "", false},
		{"the traffic token", purposeTraffic, "sb1", tr, k1, true},
		{"another secret's", purposeAccess, "sb1", other, "", false},
		{"key id swapped", purposeAccess, "sb1", strings.Replace(t1, k1, k2, 1), "", false},
		{"key id with a dot", purposeAccess, "sb1", "bxe2b.a.b." + t1[len("bxe2b.")+len(k1)+1:], "", false},
		{"empty", purposeAccess, "sb1", "", "", false},
		{"garbage", purposeAccess, "sb1", "bxe2b..", "", false},
	}
	for _, tt := range tests {
		keyID, ok, err := a.verify(ctx, tt.purpose, tt.sandbox, tt.token)
		if err != nil || ok != tt.ok || ok && keyID != tt.wantKey {
			t.Errorf("%s: verify = %q, %v, %v; want %q, %v", tt.name, keyID, ok, err, tt.wantKey, tt.ok)
		}
	}
	if equal("", "") || !equal(t1, t1again) || equal(t1, t2) {
		t.Error("equal is wrong")
	}
}

func FuzzVerifyToken(f *testing.F) {
	for _, s := range []string{"bxe2b.k.x", "bxe2b..", "bxe2b.6f1c0a3e-0000-4000-8000-000000000001.abc", ""} {
		f.Add(s)
	}
	tokens := NewTokens(func(context.Context) ([]byte, error) { return []byte(strings.Repeat("k", 32)), nil })
	f.Fuzz(func(t *testing.T, token string) {
		keyID, ok, err := tokens.verify(context.Background(), purposeAccess, "sb", token)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			want, _ := tokens.Access(context.Background(), "sb", keyID)
			if want != token {
				t.Errorf("verify accepted %q for key %q, which is not its token", token, keyID)
			}
		}
	})
}

func TestErrorNameValue(t *testing.T) {
	t.Parallel()
	tests := []struct{ tb, name, value string }{
		{"Traceback (most recent call last):\n  File \"<input>\", line 1\nValueError: boom\n", "ValueError", "boom"},
		{"KeyboardInterrupt\n", "KeyboardInterrupt", ""},
		{"x\nmod.Error: a: b", "mod.Error", "a: b"},
	}
	for _, tt := range tests {
		if n, v := errorNameValue(tt.tb); n != tt.name || v != tt.value {
			t.Errorf("errorNameValue(%q) = %q, %q; want %q, %q", tt.tb, n, v, tt.name, tt.value)
		}
	}
}

func TestConnectCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *api.Error
		want connect.Code
	}{
		{&api.Error{Code: api.CodeNotFound}, connect.CodeNotFound},
		{&api.Error{Status: 403, Code: "command_not_allowed"}, connect.CodePermissionDenied},
		{&api.Error{Status: 403, Code: api.CodeSessionBudgetExceeded}, connect.CodePermissionDenied},
		{&api.Error{Code: api.CodeValidation}, connect.CodeInvalidArgument},
		{&api.Error{Code: api.CodeRateLimited}, connect.CodeResourceExhausted},
		{&api.Error{Code: api.CodeSandboxLost, Status: 410}, connect.CodeUnavailable},
		{&api.Error{Code: api.CodeSandboxFailed}, connect.CodeUnavailable},
		{&api.Error{Code: api.CodeInternal}, connect.CodeInternal},
	}
	for _, tt := range tests {
		if got := connectCode(tt.err); got != tt.want {
			t.Errorf("connectCode(%+v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestEndEvent(t *testing.T) {
	t.Parallel()
	code := func(n int) *int { return &n }
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		killed bool
		exit   *api.InteractiveControl
		want   *process.ProcessEvent_EndEvent
	}{
		{"exited 0", false, &api.InteractiveControl{Type: api.InteractiveExit, ExitCode: code(0)}, &process.ProcessEvent_EndEvent{ExitCode: 0, Exited: true, Status: "exit status 0"}},
		{"exited", false, &api.InteractiveControl{Type: api.InteractiveExit, ExitCode: code(3)}, &process.ProcessEvent_EndEvent{ExitCode: 3, Exited: true, Status: "exit status 3", Error: str("exit status 3")}},
		{"killed", true, &api.InteractiveControl{Type: api.InteractiveExit, ExitCode: code(137)}, &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: killed", Error: str("signal: killed")}},
		{"signal", false, &api.InteractiveControl{Type: api.InteractiveExit, ExitCode: code(143), Signal: 15}, &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: terminated", Error: str("signal: terminated")}},
		{"segfault", false, &api.InteractiveControl{Type: api.InteractiveExit, ExitCode: code(139), Signal: 11}, &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: segmentation fault", Error: str("signal: segmentation fault")}},
		{"exited 137", false, &api.InteractiveControl{Type: api.InteractiveExit, ExitCode: code(137)}, &process.ProcessEvent_EndEvent{ExitCode: 137, Exited: true, Status: "exit status 137", Error: str("exit status 137")}},
		{"no exit frame", false, nil, &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: killed", Error: str("signal: killed")}},
	}
	for _, tt := range tests {
		p := &proc{killed: tt.killed}
		got := p.endEvent(tt.exit, func() bool { return false })
		if got.GetExitCode() != tt.want.GetExitCode() || got.GetExited() != tt.want.GetExited() || got.GetStatus() != tt.want.GetStatus() ||
			(got.Error == nil) != (tt.want.Error == nil) || got.GetError() != tt.want.GetError() {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestKeepAlive(t *testing.T) {
	t.Parallel()
	h := New(Options{KeepAliveMax: 30 * time.Second})
	for hdr, want := range map[string]time.Duration{"": 30 * time.Second, "50": 30 * time.Second, "5": 5 * time.Second, "x": 30 * time.Second, "-1": 30 * time.Second} {
		if got := h.keepAlive(http.Header{"Keepalive-Ping-Interval": {hdr}}); got != want {
			t.Errorf("keepAlive(%q) = %v, want %v", hdr, got, want)
		}
	}
}

// TestListScriptVanishing lists a tree while another process creates and
// removes files and directories in it (a build's temporary files). Every
// listing must succeed: find failed on an entry removed between its
// listing and its stat, or a directory removed before find went into it,
// and ListDir answered an internal error.
func TestListScriptVanishing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			d := filepath.Join(dir, "d"+strconv.Itoa(i%3))
			_ = os.MkdirAll(filepath.Join(d, "e"), 0o755)
			_ = os.WriteFile(filepath.Join(d, "e", "f"), nil, 0o644)
			_ = os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i%5)), nil, 0o644)
			_ = os.RemoveAll(d)
			_ = os.Remove(filepath.Join(dir, "f"+strconv.Itoa(i%5)))
		}
	}()
	defer func() { close(done); <-stopped }()
	for i := range 100 {
		cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(dir)+" 3\n"+listScript)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("list %d: %v: %s", i, err, stderr.String())
		}
		entries, err := parseEntries(Home, string(out))
		if err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
		if !slices.ContainsFunc(entries, func(e *filesystem.EntryInfo) bool { return e.GetName() == "kept" }) {
			t.Fatalf("list %d: %v, want kept among them", i, entries)
		}
	}
}

// TestStatScriptVanishing stats a file another process keeps creating and
// removing: each stat must find it (exit 0) or not (exitNotFound, which
// E2B's files.exists answers false), never fail otherwise (find exited 1
// when the file went between the script's check and its stat).
func TestStatScriptVanishing(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			_ = os.WriteFile(p, nil, 0o644)
			_ = os.Remove(p)
		}
	}()
	defer func() { close(done); <-stopped }()
	for i := range 300 {
		cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(p)+"\n"+statScript)
		out, err := cmd.Output()
		var exit *exec.ExitError
		switch {
		case err == nil:
			if _, err := oneEntry(Home, string(out)); err != nil {
				t.Fatalf("stat %d: %v", i, err)
			}
		case errors.As(err, &exit) && exit.ExitCode() == exitNotFound:
		case exit != nil:
			t.Fatalf("stat %d: %v: %s", i, err, exit.Stderr)
		default:
			t.Fatalf("stat %d: %v", i, err)
		}
	}
}

// TestMoveScriptDestinationRemoved: the move script through /bin/sh. A
// plain move answers the destination's entry; a destination removed by
// another process right after the move (here by an mv that removes what it
// moved) is exitGoneAfter, which Move answers as not_found naming both
// paths, not an internal error from find.
func TestMoveScriptDestinationRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	removing := "#!/bin/sh\nfor last; do :; done\n/bin/mv \"$@\" && rm -rf -- \"$last\"\n"
	if err := os.WriteFile(filepath.Join(bin, "mv"), []byte(removing), 0o755); err != nil {
		t.Fatal(err)
	}
	move := func(path string) (string, int, string) {
		src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "sub", "dst")
		if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(src)+" "+shellQuote(dst)+"\n"+moveScript)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.Output()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0, ""
		case errors.As(err, &exit):
			return string(out), exit.ExitCode(), string(exit.Stderr)
		}
		t.Fatal(err)
		return "", 0, ""
	}
	out, code, stderr := move(os.Getenv("PATH"))
	if code != 0 {
		t.Fatalf("plain move: exit %d: %s", code, stderr)
	}
	if e, err := oneEntry(Home, out); err != nil || e.GetName() != "dst" {
		t.Fatalf("plain move: entry %v, %v; want dst", e, err)
	}
	if _, code, stderr = move(bin + string(filepath.ListSeparator) + os.Getenv("PATH")); code != exitGoneAfter {
		t.Fatalf("move whose destination is removed at once: exit %d, want %d (exitGoneAfter); stderr %q", code, exitGoneAfter, stderr)
	}
}

// TestUploadPartPath checks the destination of each part of a multipart
// upload: ?path= when given, else the whole filename the SDK's
// write([...]) sends (not only its last element).
func TestUploadPartPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, query string
		filenames   []string
		want        []string
	}{
		{"single write", "/workspace/a/b.txt", []string{"/workspace/a/b.txt"}, []string{"/workspace/a/b.txt"}},
		{"many, nested", "", []string{"in/a dir/one.txt", "/tmp/in/two.txt"}, []string{"in/a dir/one.txt", "/tmp/in/two.txt"}},
		{"no filename", "/tmp/x", []string{""}, []string{"/tmp/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			for _, name := range tt.filenames {
				h := textproto.MIMEHeader{}
				h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
				w, err := mw.CreatePart(h)
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(w, "x")
			}
			mw.Close()
			r := httptest.NewRequest(http.MethodPost, "/files", &body)
			r.Header.Set("Content-Type", mw.FormDataContentType())
			var got []string
			err := (&Handler{}).uploadParts(r, tt.query, func(dest string, _ io.Reader) error {
				got = append(got, dest)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("destinations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemoveScriptMissing: the remove script through /bin/sh. envd's
// Remove is os.RemoveAll, which succeeds for a path that is not there;
// the facade answered not_found (exit 2). A file and a directory with
// everything in it are removed; an unremovable path still fails.
func TestRemoveScriptMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tree", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tree", "deep", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	remove := func(path string) (int, string) {
		cmd := exec.Command("/bin/sh", "-c", "set -- "+shellQuote(path)+"\n"+rmScript)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "no", "such", "dir"), filepath.Join(dir, "tree")} {
		if code, out := remove(p); code != 0 {
			t.Errorf("remove %s: exit %d %s, want success", p, code, out)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	if code, _ := remove("/proc/self/status"); code == 0 {
		t.Error("remove of /proc/self/status succeeded")
	}
}
