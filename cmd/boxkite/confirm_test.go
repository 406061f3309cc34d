package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestConfirmOnTerminal runs the real binary on a pseudo-terminal: session
// rm asks, and destroys only after a yes (issue 28, acceptance 2). The
// scripts cannot show this: their stdin is never a terminal.
func TestConfirmOnTerminal(t *testing.T) {
	bin := buildCLI(t)
	var (
		mu      sync.Mutex
		deleted []string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sandboxes", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode([]map[string]any{{"id": "aaa111", "status": "active", "label": "one"}})
	})
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deleted = append(deleted, r.PathValue("id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	home := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "BOXKITE_HOME=" + filepath.Join(home, ".boxkite"),
		"BOXKITE_URL=" + srv.URL, "BOXKITE_API_KEY=bxk_live_test", "TERM=dumb",
	}
	for _, tt := range []struct {
		name        string
		keys        string // typed at the prompt
		wantDeleted bool
		wantOut     string
		wantCode    int
	}{
		{"n", "n\n", false, "cancelled: nothing was changed", 1},
		{"y", "y\n", true, "removed sandbox aaa111", 0},
		{"ctrl-d", "\x04", false, "cancelled: nothing was changed", 1},
		// Ctrl-C is a SIGINT: the prompt ends at once, as the shell would.
		{"ctrl-c", "\x03", false, "", 130},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			deleted = nil
			mu.Unlock()
			cmd := exec.Command(bin, "session", "rm", "one")
			cmd.Env = env
			ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
			if err != nil {
				t.Fatalf("start on a pty: %v", err)
			}
			defer ptmx.Close()
			out := readUntil(t, ptmx, "[y/N] ")
			if !strings.Contains(out, "Destroy sandbox aaa111 (one)?") {
				t.Errorf("prompt %q does not name the sandbox", out)
			}
			mu.Lock()
			early := len(deleted)
			mu.Unlock()
			if early != 0 {
				t.Fatalf("deleted before the answer")
			}
			if _, err := ptmx.Write([]byte(tt.keys)); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case <-waited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("after %q the command still runs", tt.keys)
			}
			rest := readAll(ptmx)
			if !strings.Contains(rest, tt.wantOut) {
				t.Errorf("after %q the terminal shows %q, want %q", tt.keys, rest, tt.wantOut)
			}
			if code := cmd.ProcessState.ExitCode(); code != tt.wantCode {
				t.Errorf("after %q exit code %d, want %d", tt.keys, code, tt.wantCode)
			}
			mu.Lock()
			got := len(deleted) == 1
			mu.Unlock()
			if got != tt.wantDeleted {
				t.Errorf("after %q deleted = %v, want %v", tt.keys, got, tt.wantDeleted)
			}
		})
	}
}

// readUntil reads the terminal until it shows want, or fails after a while.
func readUntil(t *testing.T, f *os.File, want string) string {
	t.Helper()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 256)
		for !strings.Contains(out.String(), want) {
			n, err := f.Read(b)
			out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the terminal never showed %q", want)
	}
	return out.String()
}

// readAll reads the terminal until the command closes its side.
func readAll(f *os.File) string {
	var out bytes.Buffer
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		out.Write(b[:n])
		if err != nil {
			return out.String()
		}
	}
}
