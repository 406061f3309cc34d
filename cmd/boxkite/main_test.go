package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	"github.com/boxkite/boxkite/cli"
	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// When the test binary runs as `boxkite` inside a script, this calls
	// main; otherwise it runs the tests.
	testscript.Main(removingCompanions{m}, map[string]func(){"boxkite": main})
}

// removingCompanions runs the tests, then removes the companion binaries
// they built (companionBinaries).
type removingCompanions struct{ m *testing.M }

func (r removingCompanions) Run() int {
	code := r.m.Run()
	if companions.dir != "" { // every test has ended: nothing builds now
		os.RemoveAll(companions.dir)
	}
	return code
}

// TestScripts runs every testdata/script/*.txtar against the real
// boxkite-server and boxkite-sidecar, built once for all scripts. Each
// script gets its own BOXKITE_HOME, a free port in $PORT, and $CLIBIN, the
// directory holding only boxkite; for a second server (contexts),
// $BOXKITE_HOME2 and $PORT2 are another home and port; $BASTIONPORT is a
// free port for up --bastion-port. Scripts start a server with boxkiteup,
// which moves to a fresh port (and updates the variable) when another
// test has bound the picked one meanwhile.
func TestScripts(t *testing.T) {
	bin := companionBinaries(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") != "",
		Setup: func(env *testscript.Env) error {
			cliPath, err := exec.LookPath("boxkite") // installed on PATH by testscript.Main
			if err != nil {
				return err
			}
			// Not under $WORK: the sidecars' unix sockets live below
			// BOXKITE_HOME, and $WORK is too deep for the 108-byte
			// sun_path limit.
			home, err := os.MkdirTemp("", "bk")
			if err != nil {
				return err
			}
			home2, err := os.MkdirTemp("", "bk")
			if err != nil {
				return err
			}
			env.Setenv("BOXKITE_HOME", home)
			env.Setenv("BOXKITE_HOME2", home2)
			env.Setenv("CLIBIN", filepath.Dir(cliPath))
			// boxkite first (never a stray one from bin), then the companions
			// (never a stale go-installed one from further down PATH).
			sep := string(filepath.ListSeparator)
			env.Setenv("PATH", filepath.Dir(cliPath)+sep+bin+sep+env.Getenv("PATH"))
			port, err := testport.Pick()
			if err != nil {
				return err
			}
			env.Setenv("PORT", strconv.Itoa(port))
			port2 := port
			for port2 == port {
				if port2, err = testport.Pick(); err != nil {
					return err
				}
			}
			env.Setenv("PORT2", strconv.Itoa(port2))
			// A bastion port of the script's own: scripts run in parallel,
			// and one that checks up keeps its bastion's port must not find
			// another script's bastion on it.
			bastionPort := port
			for bastionPort == port || bastionPort == port2 {
				if bastionPort, err = testport.Pick(); err != nil {
					return err
				}
			}
			env.Setenv("BASTIONPORT", strconv.Itoa(bastionPort))
			if os.Getenv("GORACE") == "" {
				// Under -race every boxkite invocation would otherwise sleep
				// a second at exit; scripts run dozens of them.
				env.Setenv("GORACE", "atexit_sleep_ms=0")
			}
			// A script that fails before `boxkite down` must not leave a
			// server (and its jails) running.
			env.Defer(func() {
				for _, h := range []string{home, home2} {
					stopLeftoverServer(filepath.Join(h, "server.pid"))
					os.RemoveAll(h)
				}
			})
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode": cmdExitcode,
			"savetree": cmdSavetree,
			"gonetree": cmdGonetree,
			"envfile":  cmdEnvfile,
			"nosecret": cmdNoSecret,
			"tui":      cmdTUI,
			"fakegcs":  cmdFakeGCS,
			"webpage":  cmdWebpage,
			// boxkite up, moving to another port when one is taken
			"boxkiteup": cmdBoxkiteUp,
			"holdport":  cmdHoldPort,
		},
	})
}

// companionBinaries builds boxkite-server, boxkite-sidecar and
// boxkite-bastion into a temp dir, once for every test of the package, or
// uses BOXKITE_TEST_BINDIR when set (CI may build them once). A build per
// test linked the three binaries three times over, minutes of the
// package's 20 under a loaded CI machine, which then timed out.
func companionBinaries(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("BOXKITE_TEST_BINDIR"); dir != "" {
		return dir
	}
	dir, err := companions.get()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// companionBuild is the one build of companionBinaries; its directory is
// removed after the tests (removingCompanions).
type companionBuild struct {
	once sync.Once
	dir  string
	err  error
}

var companions companionBuild

func (b *companionBuild) get() (string, error) {
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "boxkite-companions")
		if err != nil {
			b.err = err
			return
		}
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/boxkite-server", "./cmd/boxkite-sidecar", "./cmd/boxkite-bastion")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as released
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			b.err = fmt.Errorf("go build the server, sidecar and bastion: %w\n%s", err, out)
			return
		}
		b.dir = dir
	})
	return b.dir, b.err
}

// cmdExitcode runs a command and checks its exact exit code, which the
// builtin exec cannot: exitcode N command [args...]. Its stdout and stderr
// are kept for the stdout and stderr commands, as with exec.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		ee, ok := errors.AsType[*exec.ExitError](err)
		if !ok {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdEnvfile sets an environment variable to a file's content, trimmed:
// envfile NAME FILE. FILE may be stdout or stderr, the last command's, so a
// script can use an id the CLI printed.
func cmdEnvfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: envfile NAME FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}

// cmdNoSecret checks that the process a pid file names holds no secret
// in its environment or command line, both readable in /proc for as long
// as it runs (issue 17, finding 5): nosecret PIDFILE. The secrets are
// those of $BOXKITE_HOME: the API key in local.toml and the bastion key;
// any bxk_live_ key, and the variables that used to carry them, count too.
func cmdNoSecret(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nosecret PIDFILE")
	}
	home := ts.Getenv("BOXKITE_HOME")
	pid := strings.TrimSpace(ts.ReadFile(args[0]))
	secrets := []string{"bxk_live_", "BOXKITE_BOOTSTRAP_API_KEY=", "BOXKITE_JWT_SECRET=", "BOXKITE_BASTION_KEY="}
	m := regexp.MustCompile(`(?m)^api_key = '([^']+)'$`).FindStringSubmatch(ts.ReadFile(filepath.Join(home, "local.toml")))
	if m == nil {
		ts.Fatalf("nosecret: no api_key in local.toml")
	}
	secrets = append(secrets, m[1], strings.TrimSpace(ts.ReadFile(filepath.Join(home, "bastion.key"))))
	for _, f := range []string{"environ", "cmdline"} {
		b, err := os.ReadFile(filepath.Join("/proc", pid, f))
		if err != nil {
			ts.Fatalf("nosecret: %v", err)
		}
		if len(b) == 0 {
			ts.Fatalf("nosecret: /proc/%s/%s is empty; is the process gone?", pid, f)
		}
		for _, sec := range secrets {
			if bytes.Contains(b, []byte(sec)) {
				ts.Fatalf("/proc/%s/%s holds a secret (%.12s…)", pid, f, sec)
			}
		}
	}
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid int
	start     string // start time in clock ticks since boot; tells a reused pid apart
	comm      string
	state     byte
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ... ; comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(string(b[end+2:]))
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return proc{pid: pid, ppid: ppid, start: f[19], comm: string(b[open+1 : end]), state: f[0][0]}, true
}

func allProcs() []proc {
	entries, _ := os.ReadDir("/proc")
	var ps []proc
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(pid); ok {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// cmdSavetree records the server named by a pid file and all its
// descendants (the sidecars in their jails): savetree PIDFILE OUTFILE.
// It prints their command names, so a script can check what it captured.
func cmdSavetree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: savetree PIDFILE OUTFILE")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	if err != nil {
		ts.Fatalf("savetree: %v", err)
	}
	children := map[int][]proc{}
	var root proc
	for _, p := range allProcs() {
		children[p.ppid] = append(children[p.ppid], p)
		if p.pid == pid {
			root = p
		}
	}
	if root.pid == 0 {
		ts.Fatalf("savetree: process %d is not running", pid)
	}
	var out strings.Builder
	for queue := []proc{root}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		out.WriteString(strconv.Itoa(p.pid) + " " + p.start + " " + p.comm + "\n")
		ts.Stdout().Write([]byte(p.comm + "\n"))
		queue = append(queue, children[p.pid]...)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out.String()), 0o644))
}

// cmdGonetree fails if any process saved by savetree is still running
// (zombies count as gone): gonetree FILE.
func cmdGonetree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gonetree FILE")
	}
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		f := strings.Fields(line)
		pid, _ := strconv.Atoi(f[0])
		if p, ok := readProc(pid); ok && p.start == f[1] && p.state != 'Z' && p.state != 'X' {
			ts.Fatalf("process %d (%s) is still running", pid, p.comm)
		}
	}
}

// stopLeftoverServer stops the server and the bastion of a script that did
// not run `boxkite down`, so its jails do not outlive the test.
func stopLeftoverServer(pidFile string) {
	stopLeftover(filepath.Join(filepath.Dir(pidFile), "bastion.pid"), "boxkite-bastion")
	stopLeftover(pidFile, "boxkite-server")
}

// stopLeftover stops the process in pidFile if it still runs comm.
func stopLeftover(pidFile, comm string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	p, ok := readProc(pid)
	if !ok || p.comm != comm {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if p, ok := readProc(pid); !ok || p.state == 'Z' {
			return
		}
	}
	syscall.Kill(-pid, syscall.SIGKILL)
}

// TestGeneratedDocsFresh fails when the committed man pages or completion
// scripts differ from what the command tree generates now.
func TestGeneratedDocsFresh(t *testing.T) {
	tmp := t.TempDir()
	man, compl := filepath.Join(tmp, "man"), filepath.Join(tmp, "completions")
	var stderr bytes.Buffer
	stdio := cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &stderr}
	if code := run(context.Background(), []string{"docs", "--man", man, "--completions", compl}, stdio); code != 0 {
		t.Fatalf("boxkite docs exited %d: %s", code, stderr.String())
	}
	for _, dir := range []string{"man", "completions"} {
		committed := readDir(t, filepath.Join("..", "..", dir))
		fresh := readDir(t, filepath.Join(tmp, dir))
		if diff := cmp.Diff(committed, fresh); diff != "" {
			t.Errorf("%s/ is stale; run go generate ./... (-committed +generated):\n%s", dir, diff)
		}
	}
}

// readDir reads every file below dir, by path relative to it.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v (run go generate ./...)", dir, err)
	}
	return files
}
