//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Set once by TestMain, read-only afterwards.
var (
	sidecarBin string // boxkite-sidecar built for this test run
	testBin    string // a copy of this test binary that any user can execute
)

// Environment of the helper process (see runHelper).
const (
	helperStateEnv   = "BOXKITE_LOCAL_TEST_STATE"
	helperSidecarEnv = "BOXKITE_LOCAL_TEST_SIDECAR"
	helperID         = "helper"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperStateEnv); dir != "" {
		os.Exit(runHelper(dir, os.Getenv(helperSidecarEnv)))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// World-readable, because the jail's root (an unprivileged host uid)
	// and the unprivileged test's user must be able to execute from it.
	dir, err := os.MkdirTemp("", "boxkite-local-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	sidecarBin = filepath.Join(dir, "boxkite-sidecar")
	build := exec.Command("go", "build", "-o", sidecarBin, "github.com/boxkite/boxkite/cmd/boxkite-sidecar")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as released (see TestJailsDoNotPinHostMounts)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build boxkite-sidecar:", err)
		return 1
	}
	testBin = filepath.Join(dir, "local.test")
	if err := copyExecutable(testBin); err != nil {
		fmt.Fprintln(os.Stderr, "copy test binary:", err)
		return 1
	}
	return m.Run()
}

func copyExecutable(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// runHelper plays a server process: it creates one sandbox, prints its
// endpoint as JSON and waits to be killed.
func runHelper(stateDir, sidecar string) int {
	d, err := New(Config{StateDir: stateDir, SidecarPath: sidecar})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ep, err := d.Create(context.Background(), model.Spec{ID: helperID})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(ep); err != nil {
		return 1
	}
	select {}
}

// startHelper runs runHelper in a child process, with cred when non-nil,
// and returns the sandbox's endpoint once it is up. The child is killed at
// cleanup at the latest.
func startHelper(t *testing.T, stateDir string, cred *exec.Cmd) (model.Endpoint, *exec.Cmd) {
	t.Helper()
	cmd := cred
	if cmd == nil {
		cmd = &exec.Cmd{}
	}
	cmd.Path, cmd.Args = testBin, []string{testBin}
	cmd.Env = []string{helperStateEnv + "=" + stateDir, helperSidecarEnv + "=" + sidecarBin}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var ep model.Endpoint
	if err := json.NewDecoder(out).Decode(&ep); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper printed no endpoint (%v); stderr:\n%s", err, stderr.String())
	}
	return ep, cmd
}

// newDriver returns a Driver on a fresh state dir whose sandboxes are all
// deleted when the test ends.
func newDriver(t testing.TB) *Driver {
	t.Helper()
	return newDriverWith(t, Config{StateDir: t.TempDir(), SidecarPath: sidecarBin})
}

// newDriverWith returns a Driver of cfg, shut down when the test ends.
func newDriverWith(t testing.TB, cfg Config) *Driver {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return d
}

func create(t testing.TB, d *Driver, id string) model.Endpoint {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := d.Create(ctx, model.Spec{ID: id})
	if err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
	return ep
}

// run executes command in the sandbox through the sidecar's POST /exec.
func run(t testing.TB, ep model.Endpoint, command string) api.ExecResult {
	t.Helper()
	return runWith(t, unixClient(ep.Address), ep, command)
}

// runOthers runs command in the sandbox of a driver running as another
// user: unixClient dials only this process's own sockets.
func runOthers(t testing.TB, ep model.Endpoint, command string) api.ExecResult {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", ep.Address)
	}}}
	return runWith(t, c, ep, command)
}

func runWith(t testing.TB, c *http.Client, ep model.Endpoint, command string) api.ExecResult {
	t.Helper()
	body, _ := json.Marshal(api.ExecRequest{Command: command, Timeout: 20})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://sidecar/exec", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.HeaderSidecarToken, ep.Token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec %q: %s: %s", command, resp.Status, raw)
	}
	var res api.ExecResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("exec %q: decode %s: %v", command, raw, err)
	}
	return res
}

// gone reports whether the process recorded for sandbox id has ended.
func gone(st state) bool { return !alive(st) }

// waitFor polls cond until it holds, failing the test after a generous
// deadline (a liveness check, not a timing one).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
