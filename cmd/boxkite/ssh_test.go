//go:build linux

package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// sshUser is an OpenSSH user of the local stack: a HOME of its own with a
// registered and an unregistered key, and ssh options that read nothing of
// the machine's own configuration.
type sshUser struct {
	home, good, bad string
	port            string // the bastion's, from boxkite status --json
	sandbox         string // the full id of the sandbox labelled "real"
}

func newSSHUser(t *testing.T, s *localServer) *sshUser {
	t.Helper()
	u := &sshUser{home: t.TempDir()}
	for _, name := range []string{"good", "bad"} {
		p := filepath.Join(u.home, name)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	u.good, u.bad = filepath.Join(u.home, "good"), filepath.Join(u.home, "bad")
	var st struct{ Bastion string }
	if err := json.Unmarshal([]byte(s.mustRun(t, "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(st.Bastion)
	if err != nil {
		t.Fatalf("status --json has no bastion address: %q", st.Bastion)
	}
	u.port = port
	var sb struct{ ID string }
	if err := json.Unmarshal([]byte(s.mustRun(t, "session", "get", "real", "--json")), &sb); err != nil {
		t.Fatal(err)
	}
	u.sandbox = sb.ID
	return u
}

// args are ssh's options for key, then the destination and command.
func (u *sshUser) args(key string, extra []string, command ...string) []string {
	a := []string{
		"-F", "/dev/null", "-p", u.port,
		"-o", "UserKnownHostsFile=" + filepath.Join(u.home, "known_hosts"), "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=accept-new", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
		"-o", "ConnectTimeout=20", "-i", key,
	}
	a = append(a, extra...)
	a = append(a, u.sandbox+"@127.0.0.1")
	return append(a, command...)
}

func (u *sshUser) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"HOME=" + u.home, "PATH=" + os.Getenv("PATH"), "TERM=xterm"}
	return cmd
}

// run runs ssh (or scp) and returns its exit code, stdout and stderr.
func (u *sshUser) run(t *testing.T, stdin []byte, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := u.cmd(name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return 0, stdout.String(), stderr.String()
}

// testSSH is issue 18's acceptance 1 and 6 against `boxkite up`'s own
// bastion and OpenSSH: the CLI's token path with no key registered, then
// plain ssh with a registered key (exit status, a PTY for a command, an
// unregistered key refused with a hint), byte-exact stdin and scp, and
// `ssh <sandbox>.boxkite` through the ssh-config stanza.
func testSSH(t *testing.T, s *localServer) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("the OpenSSH client is needed (apt-get install openssh-client): %v", err)
	}
	u := newSSHUser(t, s)

	// No key registered yet: boxkite ssh mints a single-use token.
	if out := s.mustRun(t, "ssh", "-s", "real", "--", "echo", "hi"); out != "hi\n" {
		t.Fatalf("boxkite ssh -s real -- echo hi printed %q", out)
	}

	s.mustRun(t, "ssh-keys", "add", u.good+".pub")
	if code, out, stderr := u.run(t, nil, "ssh", u.args(u.good, nil, "echo ok; exit 7")...); code != 7 || out != "ok\n" {
		t.Errorf("ssh 'echo ok; exit 7' = %d, %q, %q; want 7 and ok", code, out, stderr)
	}
	// boxkite ssh: the key path when ssh offers the registered key, a token
	// when it offers only another (a key registered from another machine),
	// rather than a login that fails on a key the bastion does not know.
	offering := func(key string) []string {
		return []string{
			"ssh", "-s", "real", "--ssh-arg=-F", "--ssh-arg=/dev/null", "--ssh-arg=-o",
			"--ssh-arg=IdentitiesOnly=yes", "--ssh-arg=-i", "--ssh-arg=" + key,
		}
	}
	if out, errOut, err := s.run(t, append(offering(u.good), "--", "echo", "via-key")...); err != nil || out != "via-key\n" || strings.Contains(errOut, "token") {
		t.Errorf("boxkite ssh offering the registered key = %v, %q, %q; want via-key with the key, no token", err, out, errOut)
	}
	out, errOut, err := s.run(t, append(offering(u.bad), "--", "echo", "via-token")...)
	if err != nil || out != "via-token\n" || !strings.Contains(errOut, "using a single-use takeover token") {
		t.Errorf("boxkite ssh offering only an unregistered key = %v, %q, %q; want via-token and a note", err, out, errOut)
	}

	code, _, stderr := u.run(t, nil, "ssh", u.args(u.bad, []string{"-o", "LogLevel=INFO"}, "true")...)
	if code != 255 || !strings.Contains(stderr, "hint: register it with `boxkite ssh-keys add") {
		t.Errorf("an unregistered key: exit %d, %q; want 255 and a hint", code, stderr)
	}

	t.Run("a command on a pty", func(t *testing.T) {
		cmd := u.cmd("ssh", u.args(u.good, []string{"-tt"}, "stty size")...)
		ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 31, Cols: 97})
		if err != nil {
			t.Fatal(err)
		}
		defer ptmx.Close()
		screen := readScreen(ptmx)
		if _, ok := screen.waitFor(t, 0, regexp.MustCompile(`31 97`), 30*time.Second); !ok {
			t.Errorf("ssh -tt 'stty size' showed %q; want 31 97", screen.String())
		}
		_ = cmd.Wait()
	})

	t.Run("stdin and scp are byte-exact", func(t *testing.T) {
		data := make([]byte, 5<<20+11)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		local := filepath.Join(t.TempDir(), "data.bin")
		if err := os.WriteFile(local, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want := sha256File(t, local)
		if code, _, stderr := u.run(t, data, "ssh", u.args(u.good, nil, "cat > /workspace/via-stdin.bin")...); code != 0 {
			t.Fatalf("ssh 'cat > f' < file: exit %d, %s", code, stderr)
		}
		scpArgs := slices.Clone(u.args(u.good, nil))
		scpArgs = slices.DeleteFunc(scpArgs[:len(scpArgs)-1], func(a string) bool { return a == "-p" || a == u.port })
		scpArgs = append(scpArgs, "-P", u.port, local, u.sandbox+"@127.0.0.1:/workspace/")
		if code, _, stderr := u.run(t, nil, "scp", scpArgs...); code != 0 {
			t.Fatalf("scp: exit %d, %s", code, stderr)
		}
		back := t.TempDir()
		for _, name := range []string{"via-stdin.bin", "data.bin"} {
			got := filepath.Join(back, name)
			s.mustRun(t, "files", "cp", "real:/workspace/"+name, got)
			if h := sha256File(t, got); h != want {
				t.Errorf("%s arrived as %s, want %s", name, h, want)
			}
		}
	})

	t.Run("ssh <sandbox>.boxkite", func(t *testing.T) {
		config := filepath.Join(t.TempDir(), "config")
		stanza := s.mustRun(t, "ssh-config")
		if err := os.WriteFile(config, []byte(stanza), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"-F", config, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", u.good, "real.boxkite", "echo via-config"}
		if code, out, stderr := u.run(t, nil, "ssh", args...); code != 0 || out != "via-config\n" {
			t.Errorf("ssh real.boxkite = %d, %q, %q\nstanza:\n%s", code, out, stderr, stanza)
		}
	})
}

// TestBastionLifecycle checks the local bastion across a restart and
// down: a stopped bastion is reported with what to do, up brings it back
// on its port with the same host key (known_hosts stays valid), and after
// down nothing listens there (issue 18, acceptance 1).
func TestBastionLifecycle(t *testing.T) {
	s := startLocal(t)
	u := newSSHUser(t, s)
	s.mustRun(t, "ssh-keys", "add", u.good+".pub")
	home := envValue(s.env, "BOXKITE_HOME")
	strict := []string{"-o", "UserKnownHostsFile=" + filepath.Join(home, "known_hosts"), "-o", "StrictHostKeyChecking=yes"}
	if code, out, stderr := u.run(t, nil, "ssh", u.args(u.good, strict, "echo first")...); code != 0 || out != "first\n" {
		t.Fatalf("ssh against up's known_hosts = %d, %q, %q", code, out, stderr)
	}

	pid := readPIDFile(t, filepath.Join(home, "bastion.pid"))
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); dialable("127.0.0.1:" + u.port); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bastion still listens after SIGTERM")
		}
	}
	_, stderr, err := s.run(t, "ssh", "-s", "real", "--", "true")
	if err == nil || !strings.Contains(stderr, "boxkite-bastion is not reachable") || !strings.Contains(stderr, "hint: run 'boxkite up'") {
		t.Errorf("boxkite ssh with the bastion stopped: %v, %q; want an error and a hint", err, stderr)
	}

	s.mustRun(t, "up")
	if code, out, stderr := u.run(t, nil, "ssh", u.args(u.good, strict, "echo again")...); code != 0 || out != "again\n" {
		t.Fatalf("ssh after the restart, same known_hosts = %d, %q, %q", code, out, stderr)
	}

	s.mustRun(t, "down", "--yes")
	if dialable("127.0.0.1:" + u.port) {
		t.Errorf("something still listens on the bastion's port %s after down", u.port)
	}
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, key+"="); ok {
			v = rest // the last one wins, as for exec
		}
	}
	return v
}

func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
