package faulttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/internal/testport"
)

// stackBuild is the one build of the binaries of this test process: `go
// build` takes seconds and every stack test can share its result. Made
// on the first stack test's demand; TestMain removes it.
var stackBuild struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the binaries the stack tests built (in the shared
// temporary directory: the jail's unprivileged root could not execute
// them below a test's own 0700 directory).
func TestMain(m *testing.M) {
	code := m.Run()
	if stackBuild.dir != "" {
		os.RemoveAll(stackBuild.dir)
	}
	os.Exit(code)
}

// binaries builds boxkite and its companions into a directory every user
// can execute from (the jail's root is an unprivileged host uid).
func binaries(t *testing.T) string {
	t.Helper()
	stackBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "bxkbin-")
		if err == nil {
			stackBuild.dir = dir
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			stackBuild.err = err
			return
		}
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
			"./cmd/boxkite", "./cmd/boxkite-server", "./cmd/boxkite-sidecar", "./cmd/boxkite-bastion")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as released
		if out, err := cmd.CombinedOutput(); err != nil {
			stackBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if stackBuild.err != nil {
		t.Fatal(stackBuild.err)
	}
	return stackBuild.dir
}

// A stack is a `boxkite up` of its own: BOXKITE_HOME, port and environment.
type stack struct {
	t    *testing.T
	bin  string
	home string
	port int
	env  []string
}

// newStack prepares a BOXKITE_HOME (short: sandbox sockets live under
// it) and an environment whose extra variables configure the server.
func newStack(t *testing.T, extraEnv ...string) *stack {
	t.Helper()
	bin := binaries(t)
	home, err := os.MkdirTemp("", "bk")
	if err != nil {
		t.Fatal(err)
	}
	// Below the ephemeral range: a stack's server is killed and started
	// again on this port (killServer, then up), and remains() reads any
	// listener on it as the stack's.
	port, err := testport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, bin: bin, home: home, port: port}
	s.env = append(os.Environ(),
		"BOXKITE_HOME="+home, "BOXKITE_URL=", "BOXKITE_API_KEY=", "NO_COLOR=1",
		"PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"),
	)
	s.env = append(s.env, extraEnv...)
	t.Cleanup(func() {
		s.run("down", "--yes")
		os.RemoveAll(home)
	})
	return s
}

// run runs boxkite with args and returns stdout, stderr and the error.
func (s *stack) run(args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(s.bin, "boxkite"), args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = s.env, &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func (s *stack) mustRun(args ...string) string {
	s.t.Helper()
	stdout, stderr, err := s.run(args...)
	if err != nil {
		s.t.Fatalf("boxkite %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(stdout)
}

// upAttempts bounds how often up moves the stack to another port.
const upAttempts = 5

// up runs `boxkite up` on the stack's port. Ports are picked by hand
// (internal/testport), so another test may bind the stack's port between
// the pick and up, or between a killServer and the restart: up then
// refuses it (already in use), and the stack moves to another port rather
// than fail the test.
func (s *stack) up() {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		_, stderr, err := s.run("up", "--port", strconv.Itoa(s.port))
		if err == nil {
			return
		}
		if attempt == upAttempts || !strings.Contains(stderr, fmt.Sprintf("port %d on 127.0.0.1 is already in use", s.port)) {
			s.t.Fatalf("boxkite up --port %d: %v\n%s", s.port, err, stderr)
		}
		old := s.port
		for s.port == old {
			if s.port, err = testport.Pick(); err != nil {
				s.t.Fatal(err)
			}
		}
		s.t.Logf("boxkite up: port %d is taken (another test's); the stack moves to %d", old, s.port)
	}
}

// client talks to the stack's server with the key `boxkite up` wrote.
func (s *stack) client() *client.Client {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.home, "local.toml"))
	if err != nil {
		s.t.Fatal(err)
	}
	m := regexp.MustCompile(`api_key\s*=\s*['"]([^'"]+)['"]`).FindSubmatch(b)
	if m == nil {
		s.t.Fatalf("no api_key in local.toml:\n%s", b)
	}
	return client.New("http://127.0.0.1:"+strconv.Itoa(s.port), string(m[1]))
}

// remains lists what of the stack is still on the host: its processes,
// mounts and loop devices below BOXKITE_HOME, its sandboxes' cgroups, and
// listeners on its port or on unix sockets below BOXKITE_HOME.
func (s *stack) remains() []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmd, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmd, []byte(s.home)) {
			continue
		}
		out = append(out, fmt.Sprintf("process %s: %s", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	if info, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], s.home+"/") {
				out = append(out, "mount "+f[4])
			}
		}
	}
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, l := range loops {
		if b, err := os.ReadFile(l); err == nil && strings.HasPrefix(string(b), s.home+"/") {
			out = append(out, fmt.Sprintf("loop device %s backed by %s", filepath.Base(filepath.Dir(filepath.Dir(l))), strings.TrimSpace(string(b))))
		}
	}
	for _, c := range cgroupsNamed("/sys/fs/cgroup", s.cgroupTag(), 8) {
		out = append(out, "cgroup "+c)
	}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 9 && fields[3] == "0A" && strings.HasSuffix(strings.ToUpper(fields[1]), fmt.Sprintf(":%04X", s.port)) &&
				!s.othersOnly(fields[9]) {
				out = append(out, "listener on port "+strconv.Itoa(s.port))
			}
		}
	}
	if b, err := os.ReadFile("/proc/net/unix"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 7 && strings.HasPrefix(f[7], s.home+"/") {
				out = append(out, "unix socket "+f[7])
			}
		}
	}
	return out
}

// othersOnly reports whether the socket with inode is held only by
// processes outside the stack: another test's server that picked the
// stack's port once the stack let it go. A socket no process is found
// holding counts as the stack's.
func (s *stack) othersOnly(inode string) bool {
	link := "socket:[" + inode + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	holders := 0
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err != nil || target != link {
			continue
		}
		holders++
		pid, err := strconv.Atoi(strings.Split(fd, "/")[2])
		if err != nil || s.ours(pid) {
			return false
		}
	}
	return holders > 0
}

// down runs `boxkite down`, which fails when something of the stack is
// left; what only other processes hold (see unexcused) is logged instead.
func (s *stack) down() {
	s.t.Helper()
	_, stderr, err := s.run("down", "--yes")
	if err == nil {
		return
	}
	if left := s.unexcused(); len(left) > 0 {
		s.t.Fatalf("boxkite down: %v\n%s\nstill on the host:\n  %s", err, stderr, strings.Join(left, "\n  "))
	}
	s.t.Logf("boxkite down reported leftovers only other processes hold: %v\n%s", err, stderr)
}

// wantNothingLeft fails the test with whatever of the stack remains.
func (s *stack) wantNothingLeft() {
	s.t.Helper()
	if left := s.unexcused(); len(left) > 0 {
		s.t.Errorf("after boxkite down, still on the host:\n  %s", strings.Join(left, "\n  "))
	}
}

// unexcused is what of the stack remains, after giving the kernel a
// moment to detach what was just released. A loop device whose
// filesystem only another process's mount namespace, or only another
// process's detached copy of the host's mounts, still holds (see
// holdersOf, detachedPinners) is that process's to let go: it is logged,
// not returned.
func (s *stack) unexcused() []string {
	s.t.Helper()
	var left []string
	// Up to 30 s: a loaded machine takes seconds to release loop devices
	// and mounts (5 s was the bound before).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if left = s.remains(); len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
	}
	loops := loopDevicesUnder(s.home)
	devs := map[string]bool{}
	for dev := range loops {
		devs[dev] = true
	}
	hs := holdersOf(devs, "", s.ours)
	if len(hs) == 0 && len(devs) > 0 {
		hs = detachedPinners(s.ours) // held, but not through any mount table
	}
	if len(devs) > 0 && onlyForeign(hs) {
		var excused []string
		for _, h := range hs {
			excused = append(excused, h.String())
		}
		s.t.Logf("loop devices %v are held only by processes outside this test:\n  %s", loops, strings.Join(excused, "\n  "))
		left = slices.DeleteFunc(left, func(l string) bool { return strings.HasPrefix(l, "loop device ") })
	}
	return left
}

// ours reports whether process pid is part of the stack: its command line
// names the stack's home, or it runs in one of its sandboxes' cgroups.
func (s *stack) ours(pid int) bool {
	if strings.Contains(cmdline(pid), s.home) {
		return true
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return bytes.Contains(b, []byte(s.cgroupTag()))
}

// cgroupTag is the suffix of the stack's sandboxes' cgroup names.
func (s *stack) cgroupTag() string {
	sum := sha256.Sum256([]byte(filepath.Join(s.home, "server")))
	return "." + hex.EncodeToString(sum[:4])
}

// killServer sends SIGKILL to the stack's server, leaving its sandboxes
// running, as a crash would.
func (s *stack) killServer() {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.home, "server.pid"))
	if err != nil {
		s.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		s.t.Fatal(err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		s.t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			return
		}
	}
}

// cgroupsNamed finds the cgroup directories below root, at most depth
// levels down, whose names end with suffix.
func cgroupsNamed(root, suffix string, depth int) []string {
	if depth == 0 {
		return nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(root, e.Name())
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, p)
		}
		out = append(out, cgroupsNamed(p, suffix, depth-1)...)
	}
	return out
}
