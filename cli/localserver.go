package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// The local server's companion binaries, found next to boxkite or on PATH.
const (
	serverBinary  = "boxkite-server"
	sidecarBinary = "boxkite-sidecar"
)

// Timing of up and down.
const (
	readyTimeout = 15 * time.Second // up: how long the server may take to become ready
	stopTimeout  = 10 * time.Second // down: how long SIGTERM gets before SIGKILL (the bastion)
	// serverStopTimeout is how long down gives the server after SIGTERM
	// before SIGKILL: its drain of requests in flight (5 s), then up to
	// api.ServerStopBound for its sandboxes' final flush and stop, and a
	// margin; a SIGKILL before then would cut the final flush.
	serverStopTimeout = api.ServerStopBound + 15*time.Second
	pollInterval      = 100 * time.Millisecond
)

// localPaths are the files of the local server under BOXKITE_HOME.
type localPaths struct {
	home   string
	config string // local.toml: base_url and api_key for the CLI
	pid    string // server.pid
	log    string // server.log: the detached server's stdout and stderr
	state  string // the server's state directory (database, sandboxes, sockets)
	// secrets.key: the key that wraps the data keys of the server's
	// secrets (0600), kept apart from the database it protects
	secretsKey string

	// boxkite-bastion's files (bastion.go)
	bastionKey     string // bastion.key: the key shared by the server and the bastion (0600)
	bastionPID     string // bastion.pid
	bastionLog     string // bastion.log
	bastionHostKey string // bastion_host_key (and .pub): kept so known_hosts stays valid
	knownHosts     string // known_hosts: the bastion's host key, for boxkite ssh and ssh-config
}

func pathsFor(home string) localPaths {
	p := localPaths{
		home:   home,
		config: filepath.Join(home, localFile),
		pid:    filepath.Join(home, "server.pid"),
		log:    filepath.Join(home, "server.log"),
		state:  filepath.Join(home, "server"),

		secretsKey: filepath.Join(home, "secrets.key"),
	}
	p.bastionKey, p.bastionPID, p.bastionLog, p.bastionHostKey, p.knownHosts = bastionPathsFor(home)
	return p
}

// findCompanion finds a companion binary next to the running boxkite (so a
// release archive works unpacked anywhere), then on PATH.
func findCompanion(name string) (string, error) {
	where := "on PATH"
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), name)
		if isExecutableFile(p) {
			return p, nil
		}
		where = "next to " + exe + " or on PATH"
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", &hintError{
		err:  fmt.Errorf("%s not found %s", name, where),
		hint: "install it with 'go install ./cmd/...' in a boxkite checkout, or unpack a release archive next to boxkite",
	}
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// apiKeyPattern is the shape of the keys the server issues.
var apiKeyPattern = regexp.MustCompile(`^bxk_live_[A-Za-z0-9_-]{43}$`)

// newAPIKey returns a fresh key: "bxk_live_" and 32 random bytes in URL-safe base64.
func newAPIKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate API key: %w", err)
	}
	return "bxk_live_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// readPID returns the pid in path, or 0 when there is no pid file.
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("read pid file %s: not a pid: %q", path, bytes.TrimSpace(b))
	}
	return pid, nil
}

func writePID(path string, pid int) error {
	return writeFileAtomic(path, []byte(strconv.Itoa(pid)+"\n"), 0o600)
}

// processAlive reports whether pid exists and is not a zombie. A detached
// server's parent is init, which may be slow to reap, so the zombie check matters.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) || !hasProc()
	}
	// The state follows the parenthesised command name, which may contain spaces.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

func hasProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// isBoxkiteServer reports whether pid is alive and runs boxkite-server, so a
// stale pid file can never make down signal an unrelated process that reused
// the pid.
func isBoxkiteServer(pid int) bool { return isProcessNamed(pid, serverBinary) }

// isProcessNamed reports whether pid is alive and runs the binary name.
// Without /proc (macOS) only liveness can be checked.
func isProcessNamed(pid int, name string) bool {
	if !processAlive(pid) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return !hasProc()
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(argv0)) == name
}

// runningServer returns the pid of the local server when one is running.
func runningServer(p localPaths) (int, error) {
	pid, err := readPID(p.pid)
	if err != nil || pid == 0 {
		return 0, err
	}
	if !isBoxkiteServer(pid) {
		return 0, nil
	}
	return pid, nil
}

// stopProcess sends SIGTERM, waits up to grace for pid to exit, then kills
// its whole process group (up started it as a session leader).
// tick, if not nil, is called with the time waited so far while pid runs.
func stopProcess(ctx context.Context, pid int, grace time.Duration, tick func(time.Duration)) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	if waitExitTick(ctx, pid, grace, tick) {
		return nil
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
	if waitExit(ctx, pid, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("stop pid %d: still running after SIGKILL", pid)
}

// waitExit polls until pid is gone or d has passed; it reports whether pid is gone.
func waitExit(ctx context.Context, pid int, d time.Duration) bool {
	return waitExitTick(ctx, pid, d, nil)
}

// waitExitTick is waitExit calling tick (if not nil) with the time waited
// so far at each poll.
func waitExitTick(ctx context.Context, pid int, d time.Duration, tick func(time.Duration)) bool {
	start := time.Now()
	deadline := start.Add(d)
	for processAlive(pid) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		if tick != nil {
			tick(time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// portFree reports whether 127.0.0.1:port can be listened on right now.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// listenPort binds up's port and returns the socket, which up hands to the
// server (serverArgs): binding is the look, so no other process can take
// the port between up's choice and the server's start. The port is the one
// asked for (never another), else the previous run's (so the URL stays the
// same), else 8090, else any free loopback port.
func listenPort(requested int, previousURL string) (*net.TCPListener, error) {
	if requested != 0 {
		if fetchBlocksPort(requested) {
			return nil, &hintError{
				err:  fmt.Errorf("port %d is one that browsers' and Node's fetch refuse to connect to, so the E2B SDKs could not reach it", requested),
				hint: "pick another with --port, or leave --port out and boxkite picks one",
			}
		}
		ln, err := listenLoopback(requested)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, &hintError{
				err:  fmt.Errorf("port %d on 127.0.0.1 is already in use", requested),
				hint: "pick another with --port, or leave --port out and boxkite picks a free one",
			}
		}
		return ln, err
	}
	candidates := []int{}
	if u, err := url.Parse(previousURL); err == nil && isLoopbackURL(previousURL) {
		if p, err := strconv.Atoi(u.Port()); err == nil {
			candidates = append(candidates, p)
		}
	}
	candidates = append(candidates, 8090)
	for _, p := range candidates {
		if fetchBlocksPort(p) {
			continue
		}
		if ln, err := listenLoopback(p); err == nil {
			return ln, nil
		}
	}
	ln, err := listenLoopback(0)
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	return ln, nil
}

// listenLoopback binds 127.0.0.1:port (0: any free port).
func listenLoopback(port int) (*net.TCPListener, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w", port, err)
	}
	return ln, nil
}

// fetchBlockedPorts are the ports the WHATWG fetch standard forbids, which
// Node's fetch (and so the E2B SDKs) refuses to connect to. The kernel
// never hands out one of them as a free port: all are below its ephemeral
// range.
var fetchBlockedPorts = map[int]bool{
	1: true, 7: true, 9: true, 11: true, 13: true, 15: true, 17: true, 19: true, 20: true, 21: true, 22: true,
	23: true, 25: true, 37: true, 42: true, 43: true, 53: true, 69: true, 77: true, 79: true, 87: true, 95: true,
	101: true, 102: true, 103: true, 104: true, 109: true, 110: true, 111: true, 113: true, 115: true, 117: true,
	119: true, 123: true, 135: true, 137: true, 139: true, 143: true, 161: true, 179: true, 389: true, 427: true,
	465: true, 512: true, 513: true, 514: true, 515: true, 526: true, 530: true, 531: true, 532: true, 540: true,
	548: true, 554: true, 556: true, 563: true, 587: true, 601: true, 636: true, 989: true, 990: true, 993: true,
	995: true, 1719: true, 1720: true, 1723: true, 2049: true, 3659: true, 4045: true, 4190: true, 5060: true,
	5061: true, 6000: true, 6566: true, 6665: true, 6666: true, 6667: true, 6668: true, 6669: true, 6679: true,
	6697: true, 10080: true,
}

func fetchBlocksPort(p int) bool { return fetchBlockedPorts[p] }

// serverArgs is the command line for boxkite-server in local mode. The
// database is the server's default, boxkite.db in the state directory. Its
// secrets come as files, never in its environment, where they would stay
// readable in /proc/<pid>/environ as long as it runs: the bastion key from
// its 0600 file, the bootstrap key (which makes the server create,
// idempotently, the local admin account holding it) down a pipe on
// descriptor 3 (secretPipe), so no second copy of it lands on disk. It
// serves on the socket up bound (listenPort), inherited as descriptor 4.
func serverArgs(p localPaths, sidecar string) []string {
	return []string{
		"--listen", "fd:4",
		"--driver", "local",
		"--state-dir", p.state,
		"--sidecar", sidecar,
		"--bastion-key-file", p.bastionKey,
		"--secrets-key-file", p.secretsKey,
		"--bootstrap-key-file", "/dev/fd/3",
	}
}

// secretEnv are variables boxkite-server refuses to start with (older
// versions read secrets from them); one in the caller's environment must
// not stop up.
var secretEnv = []string{"BOXKITE_BOOTSTRAP_API_KEY", "BOXKITE_JWT_SECRET", "BOXKITE_BASTION_KEY"}

// serverEnv is the server's environment: ours, without secretEnv.
func serverEnv(p localPaths) []string {
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(secretEnv, name) {
			env = append(env, kv)
		}
	}
	return append(env, "BOXKITE_SERVER_STATE_DIR="+p.state)
}

// secretPipe returns the read end of a pipe holding secret and then its
// end, for a child to read as a file (/dev/fd/N). The pipe's buffer holds
// it, so nothing waits for the child.
func secretPipe(secret string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make a pipe for the server's key: %w", err)
	}
	defer w.Close()
	if _, err := w.WriteString(secret); err != nil {
		r.Close()
		return nil, fmt.Errorf("write the server's key: %w", err)
	}
	return r, nil
}

// startDetached starts the server in its own session, with stdin from
// /dev/null and output appended to the log, so it outlives this process and
// holds none of our file descriptors (a caller waiting on our stdout would
// otherwise wait for the server too). exited receives Wait's result;
// extra become the child's descriptors 3, 4, ….
func startDetached(bin string, args, env []string, logPath string, extra ...*os.File) (cmd *exec.Cmd, exited <-chan error, err error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open server log: %w", err)
	}
	defer logf.Close() // the child has its own copy
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	fmt.Fprintf(logf, "--- boxkite up: %s %s (%s)\n", bin, strings.Join(args, " "), time.Now().Format(time.RFC3339))

	cmd = exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return cmd, ch, nil
}

// waitReady polls GET /health/ready until it answers 200, the process exits,
// or timeout passes. tick, when set, is called on every poll (progress).
func waitReady(ctx context.Context, c *client.Client, exited <-chan error, timeout time.Duration, tick func(time.Duration)) error {
	start := time.Now()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.Ready(attempt)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case err := <-exited:
			if err == nil {
				return errors.New("boxkite-server exited before it was ready")
			}
			return fmt.Errorf("boxkite-server exited before it was ready: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("boxkite-server did not become ready within %s", timeout)
		}
		if tick != nil {
			tick(time.Since(start))
		}
	}
}

// logTail returns the last n lines of the log written since offset.
func logTail(path string, offset int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
