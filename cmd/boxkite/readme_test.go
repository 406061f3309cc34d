//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// readmeLine is one command of a README block and the exit code its
// comment documents ("# exits 124"), 0 by default.
type readmeLine struct {
	block   int
	command string
	exit    int
}

var (
	fencedSh  = regexp.MustCompile("(?ms)^```sh\n(.*?)^```")
	exitsNote = regexp.MustCompile(`#.*\bexits (\d+)`)
)

// readmeCommands extracts every line of every ```sh block of the README,
// in order, as written (the comment stays: the shell ignores it).
func readmeCommands(t *testing.T, readme string) []readmeLine {
	t.Helper()
	var lines []readmeLine
	for i, m := range fencedSh.FindAllStringSubmatch(readme, -1) {
		for _, l := range strings.Split(strings.TrimRight(m[1], "\n"), "\n") {
			if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			rl := readmeLine{block: i + 1, command: l}
			if n := exitsNote.FindStringSubmatch(l); n != nil {
				rl.exit, _ = strconv.Atoi(n[1])
			}
			lines = append(lines, rl)
		}
	}
	return lines
}

// TestReadme runs the README's command blocks verbatim and in order on a
// fresh machine as far as a test can make one (issue 18, acceptance 5): a
// new HOME (so ~/.boxkite and ~/.ssh are empty), a GOBIN of its own first
// on PATH for the quick start's `go install ./cmd/...`, the repository as
// the working directory. Each line must exit as its comment says (0
// unless "# exits N"). `boxkite tui` runs on a pseudo-terminal and is
// quit with q once it drew. The one line it leaves out is the test suite
// itself, which is what runs this test.
func TestReadme(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the README's quick start needs root for the full jail; CI runs it as root")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := readmeCommands(t, string(readme))
	if len(lines) < 10 {
		t.Fatalf("found %d README commands; the extraction is broken", len(lines))
	}
	// Short: the sandboxes' sockets live below ~/.boxkite (sun_path).
	home, err := os.MkdirTemp("", "rd")
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(home, "bin")
	env := []string{
		"HOME=" + home, "GOBIN=" + gobin, "PATH=" + gobin + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"TERM=xterm-256color", "LANG=C.UTF-8",
	}
	// The Go caches stay the test process's, or the install starts cold.
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GONOSUMDB", "GOPATH", "CI"} {
		if v := goEnv(t, k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	t.Cleanup(func() {
		stopLeftoverServer(filepath.Join(home, ".boxkite", "server.pid"))
		os.RemoveAll(home)
	})
	for _, l := range lines {
		if strings.HasPrefix(l.command, "go test ") {
			t.Logf("block %d: leaving out %q: it is the command running this test", l.block, l.command)
			continue
		}
		start := time.Now()
		var code int
		var out string
		if strings.HasPrefix(l.command, "boxkite tui") {
			code, out = runTUILine(t, root, env, l.command)
		} else {
			code, out = runLine(t, root, env, l.command)
		}
		t.Logf("block %d: %s → exit %d in %s", l.block, l.command, code, time.Since(start).Round(time.Millisecond))
		if code != l.exit {
			t.Fatalf("block %d: %q exited %d, the README says %d; output:\n%s", l.block, l.command, code, l.exit, out)
		}
	}
}

func goEnv(t *testing.T, key string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

// lineCmd is sh running one README line, as a reader pasting it would.
// OpenSSH finds ~/.ssh through the password database, not $HOME, so as
// root the line runs in a mount namespace of its own where the user's
// ~/.ssh shows the test's HOME's: ssh then reads the config and keys the
// README's lines wrote there, as on a fresh machine, and nothing of this
// machine's user. (Only ~/.ssh: the rest of the real home holds the Go
// caches the install needs.)
//
// The line that starts the stack runs outside it: a namespace copies every
// mount of the host, and a daemon started in one (boxkite up) would keep
// the copies, and with them the loop devices of other tests' filesystems,
// busy until it ends.
//
// The sh dies with the test (Pdeathsig; the caller keeps its thread, which
// is what the kernel watches): a test that timed out in the quick start's
// go install left its sh to go on to `boxkite up`, whose server and pool
// disks then outlived the test, its cleanup and its TMPDIR.
func lineCmd(t *testing.T, dir string, env []string, line string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 || strings.Contains(line, "boxkite up") {
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c",
		`mkdir -p "$HOME/.ssh" "$1/.ssh" && mount --bind "$HOME/.ssh" "$1/.ssh" && cd "$2" && exec /bin/sh -c "$3"`,
		"sh", u.HomeDir, dir, line)
	cmd.Env = env
	// Go makes the new namespace's mounts private before the command runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// runLine runs one README line and returns its exit code and output.
func runLine(t *testing.T, dir string, env []string, line string) (int, string) {
	runtime.LockOSThread() // Pdeathsig follows the thread that started the sh
	defer runtime.UnlockOSThread()
	cmd := lineCmd(t, dir, env, line)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, out.String()
}

// runTUILine runs an interactive line on a pseudo-terminal, waits until it
// drew its list (or its "can't reach the server" screen), and quits it.
func runTUILine(t *testing.T, dir string, env []string, line string) (int, string) {
	t.Helper()
	runtime.LockOSThread() // Pdeathsig follows the thread that started the sh
	defer runtime.UnlockOSThread()
	cmd := lineCmd(t, dir, env, line)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	screen := readScreen(ptmx)
	if _, ok := screen.waitFor(t, 0, regexp.MustCompile(`(?i)sandbox|server|boxkite`), 30*time.Second); !ok {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		return -1, screen.String()
	}
	if _, err := ptmx.WriteString("q"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), screen.String()
		}
		return 0, screen.String()
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return -1, screen.String()
	}
}
