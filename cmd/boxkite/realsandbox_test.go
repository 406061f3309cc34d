//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/testport"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestRealSandbox drives the boxkite binary against the real server and a
// jailed sandbox for what a script cannot express: large and many-file
// transfers (issue 3, acceptance 3) and attach on a real pseudo-terminal
// (acceptance 4). One server and one sandbox serve all the subtests.
func TestRealSandbox(t *testing.T) {
	s := startLocal(t)
	t.Run("cp 50 MiB", func(t *testing.T) { testCopyBigFile(t, s) })
	t.Run("cp 10000 files", func(t *testing.T) { testCopyTree(t, s) })
	t.Run("attach", func(t *testing.T) { testAttach(t, s) })
	t.Run("ssh through the bastion", func(t *testing.T) { testSSH(t, s) })   // ssh_test.go
	t.Run("web console link", func(t *testing.T) { testUI(t, s) })           // ui_test.go
	t.Run("exec and Ctrl-C", func(t *testing.T) { testExecInterrupt(t, s) }) // execsignal_test.go
	// Last: it ends the sandbox's shell (the next attachment starts another).
	t.Run("attach until the shell exits", func(t *testing.T) { testAttachExit(t, s) })
}

// localServer is a `boxkite up` of its own, with one sandbox selected.
type localServer struct {
	cli     string   // the boxkite binary (this test binary, as testscript installs it)
	bin     string   // the companion binaries
	baseURL string   // the server's
	env     []string // BOXKITE_HOME, PATH with the companions, the bastion key, and no stray config
}

// commandTimeout bounds one boxkite command of a localServer; up on a
// loaded CI machine takes seconds, never minutes.
const commandTimeout = 3 * time.Minute

func startLocal(t *testing.T) *localServer {
	t.Helper()
	bin := companionBinaries(t)
	cli, err := exec.LookPath("boxkite")
	if err != nil {
		t.Fatal(err)
	}
	// Short, as in TestScripts: the sidecars' sockets live under it.
	home, err := os.MkdirTemp("", "bk")
	if err != nil {
		t.Fatal(err)
	}
	port, err := testport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	s := &localServer{cli: cli, bin: bin, baseURL: "http://127.0.0.1:" + strconv.Itoa(port), env: append(os.Environ(),
		"BOXKITE_HOME="+home,
		"BOXKITE_URL=", "BOXKITE_API_KEY=", "NO_COLOR=1", "GORACE=atexit_sleep_ms=0",
		"PATH="+filepath.Dir(cli)+string(filepath.ListSeparator)+bin+string(filepath.ListSeparator)+os.Getenv("PATH"),
	)}
	t.Cleanup(func() {
		s.run(t, "down", "--yes")
		stopLeftoverServer(filepath.Join(home, "server.pid"))
		os.RemoveAll(home)
	})
	// A bastion port of its own, not 2222: TestBastionLifecycle stops the
	// bastion and expects its port to stay quiet, and another package's
	// `boxkite up` takes 2222 the moment it is free.
	bastionPort := port
	for bastionPort == port {
		if bastionPort, err = testport.Pick(); err != nil {
			t.Fatal(err)
		}
	}
	s.up(t, port, bastionPort)
	s.mustRun(t, "session", "create", "--label", "real")
	return s
}

// up runs `boxkite up` on port, its bastion on bastionPort. A port taken
// by another test between the pick and up (see takenPort) moves the
// server, or the bastion, to another one.
func (s *localServer) up(t *testing.T, port, bastionPort int) {
	t.Helper()
	ports := []int{port, bastionPort}
	for attempt := 1; ; attempt++ {
		_, stderr, err := s.run(t, "up", "--port", strconv.Itoa(ports[0]), "--bastion-port", strconv.Itoa(ports[1]))
		i := takenPort(stderr, ports, 1)
		if i < 0 || attempt == upAttempts {
			if err != nil {
				t.Fatalf("boxkite up: %v\n%s", err, stderr)
			}
			break
		}
		if err == nil { // up, without its bastion
			s.mustRun(t, "down", "--yes")
		}
		p, err := otherPort(ports)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("boxkite up: port %d is taken (another test's); moving to %d", ports[i], p)
		ports[i] = p
	}
	s.baseURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
}

// run runs boxkite and returns its stdout, stderr and error.
func (s *localServer) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	// Bounded: one command that hangs (an ssh that reached another
	// process's bastion did) fails its test, not the package's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.cli, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = s.env, &stdout, &stderr, 5*time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("boxkite %s: no answer within %s: %w", strings.Join(args, " "), commandTimeout, err)
	}
	return stdout.String(), stderr.String(), err
}

func (s *localServer) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := s.run(t, args...)
	if err != nil {
		t.Fatalf("boxkite %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func testCopyBigFile(t *testing.T, s *localServer) {
	dir := t.TempDir()
	src := filepath.Join(dir, "big.bin")
	rng := rand.NewChaCha8([32]byte{3})
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(f, rng, 50<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := sha256File(t, src)

	start := time.Now()
	s.mustRun(t, "files", "cp", src, "real:/workspace/big.bin")
	// The sandbox's own copy, not just what comes back, must be exact.
	out := s.mustRun(t, "exec", "--", "sha256sum", "/workspace/big.bin")
	if got, _, _ := strings.Cut(out, " "); got != want {
		t.Errorf("sha256 in the sandbox = %s, want %s", got, want)
	}
	back := filepath.Join(dir, "back.bin")
	s.mustRun(t, "files", "cp", ":/workspace/big.bin", back)
	if got := sha256File(t, back); got != want {
		t.Errorf("sha256 after the round trip = %s, want %s", got, want)
	}
	t.Logf("50 MiB up, checked and down in %s", time.Since(start).Round(time.Millisecond))
	s.mustRun(t, "files", "rm", "/workspace/big.bin")
}

// makeTree writes files files spread over 100 directories, with assorted
// sizes and modes, and a few symlinks.
func makeTree(t *testing.T, root string, files int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	modes := []fs.FileMode{0o644, 0o600, 0o755, 0o640, 0o700, 0o444}
	buf := make([]byte, 4096)
	for i := range files {
		d := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("e%d", i%7))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		n := rng.IntN(len(buf))
		for j := range n {
			buf[j] = byte(rng.Uint32())
		}
		p := filepath.Join(d, fmt.Sprintf("f%05d", i))
		if err := os.WriteFile(p, buf[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, modes[i%len(modes)]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		target := fmt.Sprintf("../e0/f%05d", i*100)
		if err := os.Symlink(target, filepath.Join(root, "d00", fmt.Sprintf("e%d", i+1), fmt.Sprintf("link%d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// treeOf maps every entry under root to its kind, mode and content hash
// (or symlink target).
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "symlink " + target
		case fi.IsDir():
			out[rel] = "dir " + fi.Mode().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("file %s %d %x", fi.Mode(), len(b), sum[:8])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func testCopyTree(t *testing.T, s *localServer) {
	const files = 10000
	dir := t.TempDir()
	src := filepath.Join(dir, "tree")
	t0 := time.Now()
	makeTree(t, src, files)
	want := treeOf(t, src)
	t.Logf("made the tree in %s", time.Since(t0).Round(time.Millisecond))

	start := time.Now()
	_, stderr, err := s.run(t, "files", "cp", "-r", src, ":/workspace/tree")
	if err != nil {
		t.Fatalf("cp -r up: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("(%d files, ", files)) {
		t.Errorf("cp -r up said %q, want %d files", stderr, files)
	}
	up := time.Since(start)
	out := s.mustRun(t, "exec", "--", "sh", "-c", "find /workspace/tree -type f | wc -l")
	if strings.TrimSpace(out) != strconv.Itoa(files) {
		t.Errorf("the sandbox holds %s files, want %d", strings.TrimSpace(out), files)
	}
	back := filepath.Join(dir, "back")
	s.mustRun(t, "files", "cp", "-r", ":/workspace/tree", back)
	t.Logf("%d files up in %s, down in %s", files, up.Round(time.Millisecond), (time.Since(start) - up).Round(time.Millisecond))
	got := treeOf(t, back)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree after the round trip (-want +got):\n%s", diff)
	}
	t0 = time.Now()
	s.mustRun(t, "files", "rm", "-r", "/workspace/tree")
	t.Logf("removed it in %s", time.Since(t0).Round(time.Millisecond))
}

// ptyScreen collects what a program writes to a pseudo-terminal.
type ptyScreen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func readScreen(ptmx *os.File) *ptyScreen {
	s := &ptyScreen{done: make(chan struct{})}
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
	return s
}

func (s *ptyScreen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor polls the screen from offset from on until re matches, and
// returns the offset after the match.
func (s *ptyScreen) waitFor(t *testing.T, from int, re *regexp.Regexp, timeout time.Duration) (int, bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		screen := s.String()
		if loc := re.FindStringIndex(screen[from:]); loc != nil {
			return from + loc[1], true
		}
	}
	return from, false
}

// attachWait bounds each step of an attachment on a real terminal.
const attachWait = 30 * time.Second

// startAttach runs boxkite attach on the terminal tty (ptmx its other
// side) and waits until it says it attached. It returns what the terminal
// shows, the command's end, a fail that kills it and shows the screen, and
// the screen's offset after the attach message.
func startAttach(t *testing.T, s *localServer, ptmx, tty *os.File) (*ptyScreen, <-chan error, func(string, ...any), int) {
	t.Helper()
	cmd := exec.Command(s.cli, "attach")
	cmd.Env = s.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// Its own session with the pty as controlling terminal, so resizing
	// the pty sends it SIGWINCH as a terminal window would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	screen := readScreen(ptmx)
	fail := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		t.Fatalf(format+"\nscreen so far:\n%q", append(args, screen.String())...)
	}
	pos, ok := screen.waitFor(t, 0, regexp.MustCompile(`Ctrl-\] detaches`), attachWait)
	if !ok {
		fail("attach did not say it attached")
	}
	return screen, exited, fail, pos
}

func testAttach(t *testing.T, s *localServer) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}

	screen, exited, fail, pos := startAttach(t, s, ptmx, tty)
	const wait = attachWait
	var ok bool
	// $((…)) makes the output differ from the echoed command line.
	io.WriteString(ptmx, "echo hello-$((40+2))\r")
	if pos, ok = screen.waitFor(t, pos, regexp.MustCompile(`hello-42\r?\n`), wait); !ok {
		fail("the command's output never appeared")
	}
	io.WriteString(ptmx, "stty size\r")
	if pos, ok = screen.waitFor(t, pos, regexp.MustCompile(`[\r\n]30 100\r?\n`), wait); !ok {
		fail("stty size did not report the terminal's initial 30 rows, 100 columns")
	}

	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 41, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	// The resize travels apart from the keystrokes, so ask until the new
	// size shows (or the deadline passes).
	resized := false
	for deadline := time.Now().Add(wait); !resized && time.Now().Before(deadline); {
		io.WriteString(ptmx, "stty size\r")
		pos, resized = screen.waitFor(t, pos, regexp.MustCompile(`[\r\n]41 132\r?\n`), 2*time.Second)
	}
	if !resized {
		fail("stty size never reported the new 41 rows, 132 columns")
	}

	ptmx.Write([]byte{0x1d}) // Ctrl-]
	select {
	case err := <-exited:
		if err != nil {
			fail("attach exited with %v after Ctrl-], want 0", err)
		}
	case <-time.After(wait):
		fail("attach did not exit after Ctrl-]")
	}
	if _, ok := screen.waitFor(t, pos, regexp.MustCompile(`detached`), wait); !ok {
		fail("attach did not say detached")
	}
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("the terminal was not restored: termios %+v, was %+v", *after, *before)
	}

	// The takeover is in the audit log, with what was typed counted. The
	// server records its end once it has seen the session close, which
	// may be just after attach exits: wait for that entry, then check.
	var out string
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if out = s.mustRun(t, "log", "--json"); strings.Contains(out, `"operation": "takeover_end"`) {
			break
		}
	}
	for _, op := range []string{`"operation": "takeover_start"`, `"operation": "takeover_end"`, `"source": "human_takeover"`} {
		if !strings.Contains(out, op) {
			t.Errorf("audit log lacks %s", op)
		}
	}
}

// testAttachExit: the shell exiting ends attach with the shell's status,
// as an ssh session's, from the sidecar's exit frame through the server.
func testAttachExit(t *testing.T, s *localServer) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	screen, exited, fail, pos := startAttach(t, s, ptmx, tty)
	const wait = attachWait
	io.WriteString(ptmx, "exit 7\r")
	select {
	case err := <-exited:
		if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 7 {
			fail("attach after 'exit 7' exited with %v, want exit status 7", err)
		}
	case <-time.After(wait):
		fail("attach did not exit after the shell did")
	}
	if _, ok := screen.waitFor(t, pos, regexp.MustCompile(`the shell exited \(exit code 7\)`), wait); !ok {
		fail("attach did not say how the shell exited")
	}
}
