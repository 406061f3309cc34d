package cli

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/testport"
)

func TestListenPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port

	if got, err := listenPort(taken, ""); err == nil || !strings.Contains(err.Error(), "already in use") {
		if got != nil {
			got.Close()
		}
		t.Errorf("listenPort(%d) with the port taken = %v, want already in use", taken, err)
	}
	// The previous run's port is taken: fall through to 8090 or a free port.
	got, err := listenPort(0, "http://127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatalf("listenPort(0, taken previous) = %v; want another free port", err)
	}
	defer got.Close()
	port := got.Addr().(*net.TCPAddr).Port
	if port == taken || port == 0 {
		t.Errorf("listenPort(0, taken previous) is on %d; want another port", port)
	}
	// The port is up's until the server has it: nobody else binds it.
	if other, err := net.Listen("tcp", got.Addr().String()); err == nil {
		other.Close()
		t.Errorf("another process could bind %s, the port listenPort returned", got.Addr())
	}
	// A free port asked for is the one bound.
	free := freeTestPort(t)
	if got, err := listenPort(free, ""); err != nil || got.Addr().(*net.TCPAddr).Port != free {
		t.Errorf("listenPort(%d) = %v, %v; want that port", free, got, err)
	} else {
		got.Close()
	}
}

// TestListenPortAvoidsFetchBlockedPorts: the E2B SDKs use Node's fetch,
// which refuses the fetch standard's bad ports (6000, 6667, ...), so up
// neither takes one when asked nor reuses one from a previous run.
func TestListenPortAvoidsFetchBlockedPorts(t *testing.T) {
	t.Parallel()
	for _, p := range []int{6000, 6667, 10080} {
		if ln, err := listenPort(p, ""); err == nil || !strings.Contains(err.Error(), "fetch") {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("listenPort(%d) = %v, want a refusal naming fetch", p, err)
		}
		ln, err := listenPort(0, "http://127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("listenPort(0, previous port %d) = %v; want another port", p, err)
			continue
		}
		if got := ln.Addr().(*net.TCPAddr).Port; got == p {
			t.Errorf("listenPort(0, previous port %d) bound it; want another port", p)
		}
		ln.Close()
	}
	if fetchBlocksPort(8090) {
		t.Error("8090, up's default, is on the blocked list")
	}
}

// TestTestPortsNotFetchBlocked: the ports tests pick and hand to
// `boxkite up --port` lie above every port up refuses as fetch-blocked,
// so such a test can never fail on the pick (CI once drew 10080).
func TestTestPortsNotFetchBlocked(t *testing.T) {
	t.Parallel()
	for p := range fetchBlockedPorts {
		if p >= testport.Floor {
			t.Errorf("fetch-blocked port %d is at or above testport.Floor %d; raise the floor", p, testport.Floor)
		}
	}
}

func TestPIDFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "server.pid")
	if pid, err := readPID(path); pid != 0 || err != nil {
		t.Errorf("readPID(missing) = %d, %v; want 0, nil", pid, err)
	}
	if err := writePID(path, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if pid, err := readPID(path); pid != os.Getpid() || err != nil {
		t.Errorf("readPID = %d, %v; want %d", pid, err, os.Getpid())
	}
	// A live process that is not boxkite-server (this test) must never be signalled by down.
	if !processAlive(os.Getpid()) || isBoxkiteServer(os.Getpid()) {
		t.Errorf("processAlive(self) = %v, isBoxkiteServer(self) = %v; want true, false", processAlive(os.Getpid()), isBoxkiteServer(os.Getpid()))
	}
	writeFile(t, path, "garbage\n")
	if _, err := readPID(path); err == nil {
		t.Error("readPID(garbage) succeeded, want an error")
	}
}

func TestNewAPIKey(t *testing.T) {
	t.Parallel()
	a, err := newAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newAPIKey()
	if !apiKeyPattern.MatchString(a) || a == b {
		t.Errorf("newAPIKey() = %q, %q; want two different keys matching %s", a, b, apiKeyPattern)
	}
}

func TestLogTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "server.log")
	writeFile(t, path, "old run\n1\n2\n3\n4\n")
	if got := logTail(path, int64(len("old run\n")), 2); got != "3\n4" {
		t.Errorf("logTail = %q, want %q", got, "3\n4")
	}
}

// TestPrintE2BEnv: up tells how to point E2B's SDKs at the server, on
// stderr (stdout keeps the URL alone), as lines a shell can paste.
func TestPrintE2BEnv(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	printE2BEnv(&App{IO: IO{Out: &out, ErrOut: &errOut}}, "http://127.0.0.1:8090")
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", out.String())
	}
	for _, want := range []string{"\nexport E2B_API_URL=http://127.0.0.1:8090\n", "\nexport E2B_SANDBOX_URL=http://127.0.0.1:8090\n", "docs/e2b.md"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
}
