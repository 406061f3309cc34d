package sidecar

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestExecCommandFiles: a command's stdin is /dev/null when the request
// has none, else a pipe, and its stdin, stdout and stderr are blocking
// (no O_NONBLOCK, which a program would see as EAGAIN), whichever way the
// sidecar made them.
func TestExecCommandFiles(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken})
	for _, stdin := range []string{"", "some input"} {
		got := postExec(t, srv.URL, jsonBody(t, execReq("readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2", stdin)))
		links := strings.Fields(got.Stdout)
		if len(links) != 3 || !strings.HasPrefix(links[1], "pipe:") || !strings.HasPrefix(links[2], "pipe:") {
			t.Fatalf("stdin %q: the command's files are %q (%q), want three", stdin, got.Stdout, got.Stderr)
		}
		if want := "/dev/null"; stdin != "" {
			if !strings.HasPrefix(links[0], "pipe:") {
				t.Errorf("stdin %q: the command's stdin is %s, want a pipe", stdin, links[0])
			}
		} else if links[0] != want {
			t.Errorf("stdin %q: the command's stdin is %s, want %s", stdin, links[0], want)
		}
		for fd := range 3 {
			got := postExec(t, srv.URL, jsonBody(t, execReq(fmt.Sprintf("grep flags /proc/self/fdinfo/%d", fd), stdin)))
			var flags int
			if _, err := fmt.Sscanf(strings.TrimSpace(got.Stdout), "flags: %o", &flags); err != nil {
				t.Fatalf("stdin %q: fdinfo of %d: %q %q: %v", stdin, fd, got.Stdout, got.Stderr, err)
			}
			if flags&0o4000 != 0 {
				t.Errorf("stdin %q: the command's fd %d has O_NONBLOCK (flags %o)", stdin, fd, flags)
			}
		}
	}
}

// TestExecReusesReadBuffers: the output readers' 32 KiB buffers are
// reused from exec to exec, not made afresh (two an exec before, 64 KiB of
// garbage, issue 27). The race detector's sync.Pool drops a quarter of
// what is put back, so the bound is one new buffer an exec, half the two
// an exec made without reuse.
func TestExecReusesReadBuffers(t *testing.T) {
	t.Parallel()
	h := New(Options{Token: testToken, Workspace: t.TempDir(), Log: slog.New(slog.DiscardHandler)})
	var made atomic.Int64
	newBuf := h.readBufs.New
	h.readBufs.New = func() any { made.Add(1); return newBuf() }
	srv := serve(t, h)
	body := jsonBody(t, execReq("true", ""))
	const n = 40
	for range n {
		postExec(t, srv.URL, body)
	}
	if got := made.Load(); got >= n {
		t.Errorf("%d read buffers made for %d execs, want fewer than %d: they are not reused", got, n, n)
	}
}

func execReq(command, stdin string) api.ExecRequest {
	return api.ExecRequest{Command: command, Stdin: stdin}
}
