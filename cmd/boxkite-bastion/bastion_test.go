//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	gossh "golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/servertest"
)

const (
	testBastionKey = "bastion-key-for-tests-0123456789abcdef"
	testJWTSecret  = "jwt-secret-for-tests-0123456789abcdef"
)

// fixture is a real control plane with one sandbox, a bastion in front of
// it, and an ssh client configuration that touches nothing of the user's.
type fixture struct {
	t       *testing.T
	srv     *servertest.Server
	admin   *client.Client
	sandbox string
	addr    string // the bastion's host:port
	home    string // HOME for ssh, with the keys
	goodKey string // private key file, registered
	badKey  string // private key file, not registered
}

func newFixture(t *testing.T, edit func(*options)) *fixture {
	t.Helper()
	srv := servertest.New(t, servertest.WithConfig(server.Config{BastionKey: testBastionKey, JWTSecret: testJWTSecret}))
	f := &fixture{t: t, srv: srv, admin: client.New(srv.BaseURL, srv.APIKey), home: t.TempDir()}
	ctx := t.Context()
	sb, err := f.admin.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	f.sandbox = sb.ID
	f.goodKey, f.badKey = f.keygen("good"), f.keygen("bad")
	pub, err := os.ReadFile(f.goodKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.AddSSHKey(ctx, api.AddSSHKeyRequest{PublicKey: string(pub)}); err != nil {
		t.Fatalf("add ssh key: %v", err)
	}
	f.addr = startBastion(t, srv.BaseURL, edit)
	return f
}

func startBastion(t *testing.T, serverURL string, edit func(*options)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := startBastionCtx(t, ctx, serverURL, edit)
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return addr
}

// startBastionCtx serves a bastion until ctx ends; done closes once it returned.
func startBastionCtx(t *testing.T, ctx context.Context, serverURL string, edit func(*options)) (string, <-chan struct{}) {
	t.Helper()
	o := &options{
		server: serverURL, bastionKey: testBastionKey, hostKey: filepath.Join(t.TempDir(), "host_key"),
		maxPerSource: defaultMaxPerSource, maxStartups: defaultMaxStartups, loginTimeout: defaultLoginTimeout,
	}
	if edit != nil {
		edit(o)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	go func() {
		defer close(done)
		if err := serve(ctx, o, ln, log); err != nil {
			t.Errorf("bastion: %v", err)
		}
	}()
	return ln.Addr().String(), done
}

func (f *fixture) keygen(name string) string {
	f.t.Helper()
	path := filepath.Join(f.home, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path).CombinedOutput(); err != nil {
		f.t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return path
}

// sshArgs are the options of every ssh run: no config file, a private
// known_hosts, and either a key or a password read from a file.
func (f *fixture) sshArgs(key string, flags []string, command ...string) []string {
	host, port, _ := net.SplitHostPort(f.addr)
	args := []string{
		"-F", "/dev/null", "-p", port,
		"-o", "UserKnownHostsFile=" + filepath.Join(f.home, "known_hosts"), "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=accept-new",
		"-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20",
	}
	if key != "" {
		args = append(args, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "PreferredAuthentications=publickey", "-i", key)
	} else {
		args = append(args, "-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no", "-o", "NumberOfPasswordPrompts=1")
	}
	args = append(args, flags...)
	args = append(args, f.sandbox+"@"+host)
	return append(args, command...)
}

// sshCmd is ssh with args; password, when set, is what SSH_ASKPASS answers.
func (f *fixture) sshCmd(t *testing.T, args []string, password string) *exec.Cmd {
	cmd := exec.Command("ssh", args...)
	cmd.Env = []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH"), "TERM=xterm"}
	if password != "" {
		dir := t.TempDir()
		pw, script := filepath.Join(dir, "pw"), filepath.Join(dir, "askpass")
		if err := os.WriteFile(pw, []byte(password), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(script, []byte("#!/bin/sh\ncat '"+pw+"'\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "SSH_ASKPASS="+script, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	}
	return cmd
}

// run runs a non-interactive ssh and returns its exit code and output.
func (f *fixture) run(t *testing.T, args []string, password string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := f.sshCmd(t, args, password)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("ssh: %v", err)
	}
	return code, out.String(), errb.String()
}

func (f *fixture) token(t *testing.T, readOnly bool) string {
	t.Helper()
	tok, err := f.admin.TakeoverToken(t.Context(), f.sandbox, readOnly)
	if err != nil {
		t.Fatalf("mint takeover token: %v", err)
	}
	return tok.Token
}

// screen is an interactive `ssh -tt` under a pseudo-terminal.
type screen struct {
	t    *testing.T
	ptmx *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func (f *fixture) interactive(t *testing.T, args []string, password string) *screen {
	t.Helper()
	cmd := f.sshCmd(t, append([]string{"-tt"}, args...), password)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatalf("start ssh: %v", err)
	}
	s := &screen{t: t, ptmx: ptmx, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *screen) close() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.ptmx.Close()
	<-s.done
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *screen) typeText(text string) {
	s.t.Helper()
	if _, err := s.ptmx.WriteString(text); err != nil {
		s.t.Fatalf("type: %v", err)
	}
}

// expect waits until the screen shows want.
func (s *screen) expect(want string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.text(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("screen never showed %q; it shows:\n%q", want, s.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBastion(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("the OpenSSH client is needed (apt-get install openssh-client): %v", err)
	}
	f := newFixture(t, nil)

	t.Run("interactive shell with resize", func(t *testing.T) {
		s := f.interactive(t, f.sshArgs(f.goodKey, nil), "")
		s.typeText("echo hello-$((6*7))\r")
		s.expect("hello-42")
		s.typeText("stty size\r")
		s.expect("24 80")
		if err := pty.Setsize(s.ptmx, &pty.Winsize{Rows: 33, Cols: 111}); err != nil {
			t.Fatal(err)
		}
		// ssh forwards the window change on SIGWINCH; ask until it arrived.
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(s.text(), "33 111") {
			if time.Now().After(deadline) {
				t.Fatalf("stty size never showed 33 111:\n%q", s.text())
			}
			s.typeText("stty size\r")
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("command exit status and output", func(t *testing.T) {
		if code, _, stderr := f.run(t, f.sshArgs(f.goodKey, nil, "exit 7"), ""); code != 7 {
			t.Errorf("ssh 'exit 7' exited %d, want 7; stderr %q", code, stderr)
		}
		code, stdout, stderr := f.run(t, f.sshArgs(f.goodKey, nil, "echo out-$((1+1)); echo err >&2"), "")
		if code != 0 || stdout != "out-2\n" || stderr != "err\n" {
			t.Errorf("ssh 'echo' = %d, %q, %q; want 0, out-2, err", code, stdout, stderr)
		}
		// Raw bytes: no \n rewriting, any byte passes.
		code, stdout, _ = f.run(t, f.sshArgs(f.goodKey, nil, `printf 'a\nb\r\n\tc'`), "")
		if code != 0 || stdout != "a\nb\r\n\tc" {
			t.Errorf("ssh printf = %d, %q; want the bytes unchanged", code, stdout)
		}
		// A token works for a command too.
		if code, stdout, _ := f.run(t, f.sshArgs("", nil, "echo via-token"), f.token(t, false)); code != 0 || stdout != "via-token\n" {
			t.Errorf("ssh with token = %d, %q", code, stdout)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		if code, _, stderr := f.run(t, f.sshArgs(f.badKey, nil, "true"), ""); code != 255 || !strings.Contains(stderr, "Permission denied") {
			t.Errorf("unregistered key: exit %d, %q; want 255, permission denied", code, stderr)
		}
		if code, _, stderr := f.run(t, f.sshArgs("", nil, "true"), f.expiredToken()); code != 255 || !strings.Contains(stderr, "Permission denied") {
			t.Errorf("expired token: exit %d, %q; want 255, permission denied", code, stderr)
		}
		tok := f.token(t, false)
		if code, _, _ := f.run(t, f.sshArgs("", nil, "true"), tok); code != 0 {
			t.Errorf("fresh token: exit %d", code)
		}
		if code, _, _ := f.run(t, f.sshArgs("", nil, "true"), tok); code != 255 {
			t.Errorf("reused token: exit %d, want 255", code)
		}
		code, _, stderr := f.run(t, f.sshArgs(f.goodKey, []string{"-s"}, "no-such-subsystem"), "")
		if code == 0 {
			t.Errorf("unknown subsystem: exit 0, %q; want a refusal", stderr)
		}
		// No key at all: keyboard-interactive's prompt says what to do,
		// and takes a takeover token.
		noKey := func(args []string) []string {
			args[slices.Index(args, "PreferredAuthentications=password")] = "PreferredAuthentications=keyboard-interactive"
			args[slices.Index(args, "LogLevel=ERROR")] = "LogLevel=INFO"
			return args
		}
		code, _, stderr = f.run(t, noKey(f.sshArgs("", nil, "true")), "")
		if code != 255 || !strings.Contains(stderr, "no SSH key registered") || !strings.Contains(stderr, "hint: register yours with `boxkite ssh-keys add") {
			t.Errorf("no key: exit %d, %q; want 255 and a hint", code, stderr)
		}
		if code, stdout, stderr := f.run(t, noKey(f.sshArgs("", nil, "echo via-prompt")), f.token(t, false)); code != 0 || stdout != "via-prompt\n" {
			t.Errorf("a token at the keyboard-interactive prompt: exit %d, %q, %q", code, stdout, stderr)
		}
		// At ssh's default log level the refusal's banner says what to do.
		args := f.sshArgs(f.badKey, nil, "true")
		args[slices.Index(args, "LogLevel=ERROR")] = "LogLevel=INFO"
		code, _, stderr = f.run(t, args, "")
		if code != 255 || !strings.Contains(stderr, "is not registered") || !strings.Contains(stderr, "hint: register it with `boxkite ssh-keys add") {
			t.Errorf("unregistered key at the default log level: exit %d, %q; want 255 and a hint", code, stderr)
		}
	})
	t.Run("an unregistered key offered before a registered one", func(t *testing.T) {
		// ssh offers its keys in turn: the first one's banner must not
		// contradict the login the second one makes.
		args := f.sshArgs(f.badKey, []string{"-i", f.goodKey}, "echo in-$((6*7))")
		args[slices.Index(args, "LogLevel=ERROR")] = "LogLevel=INFO"
		code, stdout, stderr := f.run(t, args, "")
		if code != 0 || stdout != "in-42\n" {
			t.Fatalf("two keys, the second registered: exit %d, %q, %q; want 0 and the command's output", code, stdout, stderr)
		}
		want := "key " + fingerprint(t, f.badKey) + " is not registered to the account of sandbox"
		if !strings.Contains(stderr, want) || !strings.Contains(stderr, "if ssh logs in with another key, ignore this") {
			t.Errorf("two keys: stderr %q; want the first key's banner (%q) saying to ignore it when another key logs in", stderr, want)
		}
	})
	t.Run("other tenants and ended sandboxes", func(t *testing.T) { f.testTenancy(t) })
	t.Run("a command on a pty", func(t *testing.T) {
		s := f.interactive(t, f.sshArgs(f.goodKey, nil, "stty size; tty"), "")
		s.expect("24 80")
		s.expect("/dev/pts/")
	})
	t.Run("stdin is forwarded byte-exact", func(t *testing.T) {
		data := make([]byte, 3<<20+17)
		for i := range data {
			data[i] = byte(i*7 + i/251) // every byte value, no pattern ssh could shorten
		}
		cmd := f.sshCmd(t, f.sshArgs(f.goodKey, nil, "cat > /workspace/stdin.bin && cat /workspace/stdin.bin"), "")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ssh 'cat > f' < file: %v", err)
		}
		if !bytes.Equal(out, data) {
			t.Errorf("the file came back as %d bytes, want the %d sent, unchanged", len(out), len(data))
		}
	})
	t.Run("scp sftp and rsync", func(t *testing.T) { f.testTransfers(t) })
	t.Run("sessions per connection", func(t *testing.T) { f.testSessionsPerConnection(t) })
	t.Run("unauthenticated connections at once", func(t *testing.T) { f.testStartups(t) })

	t.Run("member key cannot mint a token", func(t *testing.T) {
		k, err := f.admin.CreateAPIKey(t.Context(), api.CreateAPIKeyRequest{Name: "bot", Role: api.RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.New(f.srv.BaseURL, k.Key).TakeoverToken(t.Context(), f.sandbox, false)
		if e, ok := errors.AsType[*api.Error](err); !ok || e.Status != 403 || e.Code != api.CodeTakeoverNotPermitted {
			t.Errorf("member mint = %v, want 403 %s", err, api.CodeTakeoverNotPermitted)
		}
	})

	t.Run("two attachers and a read-only observer", func(t *testing.T) {
		a := f.interactive(t, f.sshArgs(f.goodKey, nil), "")
		b := f.interactive(t, f.sshArgs("", nil), f.token(t, false))
		watcher := f.interactive(t, f.sshArgs("", nil), f.token(t, true))
		a.typeText("echo shared-$((2+3))\r")
		for _, s := range []*screen{a, b, watcher} {
			s.expect("shared-5")
		}
		b.typeText("echo from-b-$((3+4))\r")
		a.expect("from-b-7")
		watcher.typeText("echo watcher-$((5+5))\r")
		a.typeText("echo marker-$((8*8))\r")
		for _, s := range []*screen{a, b, watcher} {
			s.expect("marker-64")
		}
		if strings.Contains(a.text(), "watcher-") {
			t.Errorf("a read-only observer's keystrokes reached the terminal:\n%q", a.text())
		}
	})

	t.Run("audit shows the takeover and what was typed", func(t *testing.T) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			ops, typed := f.audit(t)
			if ops["takeover_start"] > 0 && ops["takeover_end"] == ops["takeover_start"] && strings.Contains(typed, "echo hello-$((6*7))") &&
				strings.Contains(typed, "echo from-b-$((3+4))") {
				if strings.Contains(typed, "watcher-") {
					t.Errorf("read-only keystrokes were logged as typed: %q", typed)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("audit never showed the takeovers: ops %v, typed %q", ops, typed)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// audit counts the takeover entries by operation and joins the typed input.
func (f *fixture) audit(t *testing.T) (map[string]int, string) {
	t.Helper()
	page, err := f.admin.Log(t.Context(), f.sandbox, api.MaxLogLimit, 0)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	var typed strings.Builder
	for _, e := range page.Entries {
		ops[e.Operation]++
		if e.Operation == "takeover_input" {
			var d struct{ Input string }
			if err := json.Unmarshal(e.Detail, &d); err != nil {
				t.Fatal(err)
			}
			typed.WriteString(d.Input)
		}
	}
	return ops, typed.String()
}

// expiredToken signs a takeover token, valid in every way but its expiry,
// with the server's JWT secret.
func (f *fixture) expiredToken() string {
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{
		"type": "sandbox_takeover", "sub": f.srv.Account.ID, "sbx": f.sandbox, "kid": "k", "kname": "k",
		"via": "api_key", "jti": strconv.FormatInt(now.UnixNano(), 10), "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(-time.Second).Unix(),
	})
	enc := base64.RawURLEncoding.EncodeToString
	signed := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc(claims)
	m := hmac.New(sha256.New, []byte(testJWTSecret))
	m.Write([]byte(signed))
	return signed + "." + enc(m.Sum(nil))
}

// TestLimits checks the connection limits with Go's SSH client, which
// counts attempts exactly.
func TestLimits(t *testing.T) {
	srv := servertest.New(t, servertest.WithConfig(server.Config{BastionKey: testBastionKey}))

	t.Run("five failed attempts", func(t *testing.T) {
		addr := startBastion(t, srv.BaseURL, nil)
		tries := 0
		cfg := &gossh.ClientConfig{
			User: "no-such-sandbox",
			Auth: []gossh.AuthMethod{gossh.RetryableAuthMethod(gossh.PasswordCallback(func() (string, error) {
				tries++
				return "wrong", nil
			}), 20)},
			HostKeyCallback: gossh.InsecureIgnoreHostKey(),
		}
		if _, err := gossh.Dial("tcp", addr, cfg); err == nil {
			t.Fatal("dial succeeded with a wrong password")
		}
		if tries != maxAuthTries {
			t.Errorf("password asked %d times before the disconnect, want %d", tries, maxAuthTries)
		}
	})

	t.Run("per-source connections", func(t *testing.T) {
		addr := startBastion(t, srv.BaseURL, func(o *options) { o.maxPerSource = 2 })
		for range 2 {
			if _, banner := dialBanner(t, addr); !strings.HasPrefix(banner, "SSH-2.0-boxkite-bastion") {
				t.Fatal("no SSH banner within the limit")
			}
		}
		if _, got := dialBanner(t, addr); got != "" {
			t.Errorf("third connection got %q, want it closed", got)
		}
	})

	t.Run("login timeout", func(t *testing.T) {
		addr := startBastion(t, srv.BaseURL, func(o *options) { o.loginTimeout = 100 * time.Millisecond })
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("idle unauthenticated connection: %v, want closed by the bastion", err)
		}
	})
}

// dialBanner connects to the bastion at addr (closed when the test ends)
// and reads its banner, "" when the bastion closed the connection.
func dialBanner(t *testing.T, addr string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, readBanner(t, c)
}

// readBanner reads what the server sends first: its version line, or
// nothing when it closes at once.
func readBanner(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b := make([]byte, 64)
	n, err := c.Read(b)
	if err != nil && !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("read banner: %v", err)
	}
	return string(b[:n])
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && strings.Contains(ne.Err.Error(), "reset")
}

func TestHostKeyPersists(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys", "host_key")
	a, err := hostKey(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hostKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.PublicKey().Marshal(), b.PublicKey().Marshal()) {
		t.Error("the host key changed between starts")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("host key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
}

// testTransfers copies a file to the sandbox and back with scp (sftp
// mode, and -O, which runs scp in the sandbox), sftp and rsync -e ssh.
func (f *fixture) testTransfers(t *testing.T) {
	local := filepath.Join(t.TempDir(), "payload.bin")
	data := make([]byte, 1<<20+3)
	for i := range data {
		data[i] = byte(i % 253)
	}
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(f.addr)
	dest := f.sandbox + "@" + host
	common := []string{
		"-F", "/dev/null", "-o", "UserKnownHostsFile=" + filepath.Join(f.home, "known_hosts"), "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=accept-new", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", f.goodKey,
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	same := func(what, path string) {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: the copy back differs (%d bytes, %v)", what, len(got), err)
		}
	}
	back := t.TempDir()
	run("scp", append(slices.Clone(common), "-P", port, local, dest+":/workspace/scp.bin")...)
	run("scp", append(slices.Clone(common), "-P", port, dest+":/workspace/scp.bin", filepath.Join(back, "scp.bin"))...)
	same("scp", filepath.Join(back, "scp.bin"))
	run("scp", append(slices.Clone(common), "-O", "-P", port, local, dest+":/workspace/legacy.bin")...)
	run("scp", append(slices.Clone(common), "-O", "-P", port, dest+":/workspace/legacy.bin", filepath.Join(back, "legacy.bin"))...)
	same("scp -O", filepath.Join(back, "legacy.bin"))

	batch := filepath.Join(t.TempDir(), "batch")
	script := "mkdir sub\nput " + local + " sub/sftp.bin\nrename sub/sftp.bin sub/moved.bin\nget sub/moved.bin " + filepath.Join(back, "sftp.bin") + "\n"
	if err := os.WriteFile(batch, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	run("sftp", append(slices.Clone(common), "-P", port, "-b", batch, dest)...)
	same("sftp", filepath.Join(back, "sftp.bin"))

	if _, err := exec.LookPath("rsync"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("rsync is needed under CI (.ci/run installs it): %v", err)
		}
		t.Logf("rsync not installed; skipping its part")
		return
	}
	rsh := "ssh " + strings.Join(append(slices.Clone(common), "-p", port), " ")
	run("rsync", "-a", "-e", rsh, local, dest+":/workspace/rsync.bin")
	run("rsync", "-a", "-e", rsh, dest+":/workspace/rsync.bin", filepath.Join(back, "rsync.bin"))
	same("rsync", filepath.Join(back, "rsync.bin"))
}

// TestShutdownTellsSessions stops a bastion with a command running through
// it: the session reads why it ends and exits 255.
func TestShutdownTellsSessions(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := startBastionCtx(t, ctx, f.srv.BaseURL, nil)
	f.addr = addr
	cmd := f.sshCmd(t, f.sshArgs(f.goodKey, nil, "echo started; sleep 60"), "")
	var stdout, stderr lockedbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "started"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	cancel()
	<-done
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 255 || !strings.Contains(stderr.String(), "the bastion is shutting down") {
		t.Errorf("ssh after the shutdown: %v, stderr %q; want exit 255 and the message", err, stderr.String())
	}
}

// TestDestroyedSandboxTellsSessions destroys the sandbox under an ssh
// session on its terminal and under a command: each reads why it ends
// and exits 1, where the terminal closed as if the shell had exited
// (status 0, no word) and the command printed a WebSocket error.
func TestDestroyedSandboxTellsSessions(t *testing.T) {
	f := newFixture(t, nil)
	s := f.interactive(t, f.sshArgs(f.goodKey, nil), "")
	s.typeText("echo ready-$((6*7))\r")
	s.expect("ready-42")
	cmd := f.sshCmd(t, f.sshArgs(f.goodKey, nil, "echo started; sleep 60"), "")
	var stdout, stderr lockedbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "started"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	if err := f.admin.DeleteSandbox(t.Context(), f.sandbox); err != nil {
		t.Fatal(err)
	}
	var ce *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ce) || ce.ExitCode() != 1 ||
		!strings.Contains(stderr.String(), "boxkite-bastion: error: sandbox "+f.sandbox+" was destroyed") || !strings.Contains(stderr.String(), "hint: create a new one") {
		t.Errorf("ssh 'cmd' after the sandbox was destroyed: %v, stderr %q; want exit 1 and why", err, stderr.String())
	}
	s.expect("sandbox " + f.sandbox + " was destroyed")
	s.expect("hint: create a new one")
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("ssh after the sandbox was destroyed: %v, want exit 1; screen:\n%q", err, s.text())
	}
}

// TestPausedSandboxTellsCommand pauses the sandbox under an ssh command,
// in each mode (a freeze would otherwise hold it without a word until the
// resume): it exits 1 saying the sandbox was paused, with a hint to resume
// it, not to create a new one as for a destroyed sandbox.
func TestPausedSandboxTellsCommand(t *testing.T) {
	f := newFixture(t, nil)
	for _, mode := range []string{api.PauseFreeze, api.PauseFilesystem} {
		cmd := f.sshCmd(t, f.sshArgs(f.goodKey, nil, "echo started; sleep 60"), "")
		var stdout, stderr lockedbuf.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "started"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the command never started", mode)
			}
		}
		if _, err := f.admin.PauseSandbox(t.Context(), f.sandbox, mode); err != nil {
			t.Fatal(err)
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(60 * time.Second): // a hang guard only
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%s: ssh 'cmd' did not end within 60 s of the pause; stderr %q", mode, stderr.String())
		}
		var ce *exec.ExitError
		want := "boxkite-bastion: error: sandbox " + f.sandbox + " was paused while the command ran\r\n" +
			"hint: resume it with `boxkite session resume " + f.sandbox + "`, then run the command again\r\n"
		if !errors.As(err, &ce) || ce.ExitCode() != 1 || stderr.String() != want {
			t.Errorf("%s: ssh 'cmd' after the sandbox was paused: %v, stderr %q; want exit 1 and %q", mode, err, stderr.String(), want)
		}
		if mode == api.PauseFreeze {
			if _, err := f.admin.ResumeSandbox(t.Context(), f.sandbox); err != nil {
				t.Fatal(err)
			}
		}
	}
	// An unregistered key offered first does not hide why the registered
	// one cannot log in: the sandbox is paused.
	args := f.sshArgs(f.badKey, []string{"-i", f.goodKey}, "true")
	args[slices.Index(args, "LogLevel=ERROR")] = "LogLevel=INFO"
	code, _, errs := f.run(t, args, "")
	if code != 255 || !strings.Contains(errs, "is not registered") ||
		!strings.Contains(errs, "boxkite-bastion: sandbox "+f.sandbox+" is paused (filesystem)\r\nhint: resume it") {
		t.Errorf("two keys, the first unregistered, to a paused sandbox: exit %d, %q; want 255 and that it is paused", code, errs)
	}
}

// TestPausedSandboxTellsTerminal freezes the sandbox under an ssh
// session on its terminal: the session says the sandbox was paused and
// how to go on, and exits 1 (before, it hung without a word until the
// resume); after the resume the same shell answers a new session.
func TestPausedSandboxTellsTerminal(t *testing.T) {
	f := newFixture(t, nil)
	s := f.interactive(t, f.sshArgs(f.goodKey, nil), "")
	s.typeText("mark=$((6*7)); echo marked-$mark\r")
	s.expect("marked-42")
	if _, err := f.admin.PauseSandbox(t.Context(), f.sandbox, api.PauseFreeze); err != nil {
		t.Fatal(err)
	}
	s.expect("boxkite-bastion: error: sandbox " + f.sandbox + " was paused\r\n" +
		"hint: resume it with `boxkite session resume " + f.sandbox + "`, then connect again")
	<-s.done // ssh exited: the pty closed
	var ee *exec.ExitError
	if err := s.cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("ssh after the pause: %v, want exit 1; screen:\n%q", err, s.text())
	}
	if _, err := f.admin.ResumeSandbox(t.Context(), f.sandbox); err != nil {
		t.Fatal(err)
	}
	again := f.interactive(t, f.sshArgs(f.goodKey, nil), "")
	again.typeText("echo still-$mark\r")
	again.expect("still-42")
}
