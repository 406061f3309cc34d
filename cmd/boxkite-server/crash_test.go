package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// runServerEnv makes the test binary run main instead of the tests: the
// crash test starts the real boxkite-server program that way, as a child
// process it can SIGKILL.
const runServerEnv = "BOXKITE_TEST_RUN_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(runServerEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// serverProcess is boxkite-server running as a child process.
type serverProcess struct {
	cmd  *exec.Cmd
	base string
	out  *lockedbuf.Buffer
	done chan struct{}
}

// startServer runs boxkite-server on a free loopback port with SQLite in
// stateDir, and the flags in extra, and waits until it listens.
func startServer(t *testing.T, stateDir, key string, extra ...string) *serverProcess {
	t.Helper()
	return startServerBinary(t, os.Args[0], stateDir, key, extra...)
}

// startServerBinary is startServer with another boxkite-server binary
// (bin os.Args[0] is this test binary, running main).
func startServerBinary(t *testing.T, bin, stateDir, key string, extra ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{
		"--listen", "127.0.0.1:0", "--state-dir", stateDir, "--db", "sqlite:" + stateDir + "/boxkite.db",
		"--sidecar", servertest.SidecarBinary(t),
	}, extra...)...)
	keyFile := filepath.Join(t.TempDir(), "bootstrap.key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Args = append(cmd.Args, "--bootstrap-key-file", keyFile)
	cmd.Env = append(os.Environ(), runServerEnv+"=1", "BOXKITE_SERVER_WARM_POOL=0")
	p := &serverProcess{cmd: cmd, out: &lockedbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		// A clean stop takes the sandboxes down with the server.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	// A hang guard: the race-built server starts in about a second, more
	// on a loaded CI machine.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m := listening.FindStringSubmatch(p.out.String()); m != nil {
			p.base = m[1]
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("boxkite-server exited before listening:\n%s", p.out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("boxkite-server is not listening:\n%s", p.out.String())
		}
	}
}

// kill sends SIGKILL and waits for the process to go.
func (p *serverProcess) kill() error {
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	<-p.done
	return nil
}

// call sends a JSON request and decodes a 2xx answer into out.
func call(ctx context.Context, base, key, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err // a body cut off by the kill is no answer
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

// TestKillDuringExecBurst (issue 5, acceptance 3): boxkite-server is
// SIGKILLed while execs run concurrently; after a restart, every exec
// that got a 2xx answer has its audit entry and the chain verifies with
// api.VerifyLogChain.
func TestKillDuringExecBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	// Unix socket paths under the state directory must stay short.
	stateDir, err := os.MkdirTemp("", "bxk-crash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })
	key := model.NewAPIKey()
	srv := startServer(t, stateDir, key)
	ctx := context.Background()
	var sb api.Sandbox
	if _, err := call(ctx, srv.base, key, "POST", "/v1/sandboxes", api.CreateSandboxRequest{}, &sb); err != nil {
		t.Fatalf("create sandbox: %v\n%s", err, srv.out.String())
	}

	const workers, killAfter = 6, 40
	var (
		mu        sync.Mutex
		succeeded []string     // commands of execs answered 2xx
		count     atomic.Int32 // execs answered
		wg        sync.WaitGroup
	)
	killed := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				command := fmt.Sprintf("echo burst-%d-%d", w, i)
				var res api.ExecResult
				if _, err := call(ctx, srv.base, key, "POST", "/v1/sandboxes/"+sb.ID+"/exec", api.ExecRequest{Command: command}, &res); err != nil {
					select {
					case <-killed:
						return // the server is gone; this exec has no answer
					default:
						t.Errorf("exec before the kill: %v", err)
						return
					}
				}
				if strings.TrimSpace(res.Stdout) != command[len("echo "):] {
					t.Errorf("exec %q printed %q", command, res.Stdout)
				}
				mu.Lock()
				succeeded = append(succeeded, command)
				mu.Unlock()
				count.Add(1)
			}
		})
	}
	// Kill at an arbitrary moment once the burst is well under way, so
	// that execs are caught at every stage: in the sidecar, being logged,
	// being answered.
	for count.Load() < killAfter {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	close(killed) // first, so the workers expect their errors
	if err := srv.kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("the burst ended before the kill:\n%s", srv.out.String())
	}

	srv = startServer(t, stateDir, key)
	var entries []api.LogEntry
	var first *api.LogPage
	for {
		var page api.LogPage
		path := fmt.Sprintf("/v1/sandboxes/%s/log?limit=%d&offset=%d", sb.ID, api.MaxLogLimit, len(entries))
		if _, err := call(ctx, srv.base, key, "GET", path, nil, &page); err != nil {
			t.Fatalf("read the log after the restart: %v\n%s", err, srv.out.String())
		}
		if first == nil {
			first = &page
		}
		entries = append(entries, page.Entries...)
		if len(page.Entries) == 0 || len(entries) >= page.Total {
			break
		}
	}
	// The chain, and that it reaches the head the server recorded.
	if err := api.VerifyLog(entries, first.HeadSeq, first.HeadHash); err != nil {
		t.Errorf("VerifyLog after the kill: %v", err)
	}
	logged := map[string]bool{}
	for _, e := range entries {
		var d struct {
			Command string `json:"command"`
		}
		if e.Operation == "exec" && json.Unmarshal(e.Detail, &d) == nil {
			logged[d.Command] = true
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(succeeded) < killAfter {
		t.Fatalf("only %d execs succeeded", len(succeeded))
	}
	for _, c := range succeeded {
		if !logged[c] {
			t.Errorf("exec %q was answered 2xx but is not in the audit log", c)
		}
	}
	t.Logf("%d execs answered before the kill, %d exec entries logged", len(succeeded), len(logged))

	// The sandbox survived the kill and was adopted by the new server.
	var res api.ExecResult
	if _, err := call(ctx, srv.base, key, "POST", "/v1/sandboxes/"+sb.ID+"/exec", api.ExecRequest{Command: "echo after"}, &res); err != nil || res.Stdout != "after\n" {
		t.Errorf("exec after the restart = %+v, %v", res, err)
	}
}
