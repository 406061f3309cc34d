package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeServerEnv makes this test binary, started as boxkite-server by up,
// act as the fake server of TestUpKeepsItsPort (TestMain).
const fakeServerEnv = "BOXKITE_CLI_TEST_FAKE_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		os.Exit(fakeServer(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeServer is a boxkite-server that loses the race for its port: before
// it listens, another process binds the port up chose. It then serves
// /health/ready on what --listen names (an address to bind, or fd:N, a
// socket up bound and handed over) until SIGTERM.
func fakeServer(args []string) int {
	i := slices.Index(args, "--listen")
	if i < 0 || i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "fake server: no --listen")
		return 2
	}
	addr := args[i+1]
	var ln net.Listener
	if fd, ok := strings.CutPrefix(addr, "fd:"); ok {
		n, _ := strconv.Atoi(fd)
		f := os.NewFile(uintptr(n), "listener")
		l, err := net.FileListener(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake server:", err)
			return 1
		}
		f.Close()
		ln, addr = l, l.Addr().String()
	}
	// The other process: it binds the port if it can, and holds it.
	if thief, err := net.Listen("tcp", addr); err == nil {
		defer thief.Close()
		fmt.Fprintln(os.Stderr, "fake server: another process bound", addr, "first")
	}
	if ln == nil {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake server: listen:", err)
			return 1
		}
		ln = l
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health/ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: mux}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "fake server:", err)
		return 1
	}
	return 0
}

// TestUpKeepsItsPort: another process binding the port up chose, after up
// chose it and before the server is up, neither fails up nor moves its
// server. up binds the port itself and hands the socket over, so the other
// process finds it taken; before, up only looked, the other process won,
// and the server exited with "address already in use".
func TestUpKeepsItsPort(t *testing.T) {
	for _, tt := range []struct {
		name      string
		requested bool // --port, else the previous run's port
	}{
		{name: "requested port", requested: true},
		{name: "previous run's port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			bin := t.TempDir()
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			for name, target := range map[string]string{serverBinary: exe, sidecarBinary: "/bin/true"} {
				if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", bin)
			t.Setenv(fakeServerEnv, "1")
			p := pathsFor(home)
			t.Cleanup(func() { stopFakeServer(t, p.pid) })
			port := freeTestPort(t)
			args := []string{"up"}
			if tt.requested {
				args = append(args, "--port", strconv.Itoa(port))
			} else {
				if err := os.MkdirAll(home, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := updateFileConfig(p.config, func(fc *fileConfig) { fc.BaseURL = "http://127.0.0.1:" + strconv.Itoa(port) }); err != nil {
					t.Fatal(err)
				}
			}
			r := runCLI(t, "", args...)
			if r.code != 0 {
				t.Fatalf("up = %d\nstderr (the server log's tail in the hint):\n%s", r.code, r.stderr)
			}
			if want := "http://127.0.0.1:" + strconv.Itoa(port); strings.TrimSpace(r.stdout) != want {
				t.Errorf("up printed %q, want %q", r.stdout, want)
			}
		})
	}
}

// stopFakeServer ends the server up started, whose pid is in pidFile.
func stopFakeServer(t *testing.T, pidFile string) {
	t.Helper()
	pid, err := readPID(pidFile)
	if err != nil || pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	if !waitExit(context.Background(), pid, 10*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
