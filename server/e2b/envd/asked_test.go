package envd

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

// TestAskedError: answers named a path as it was asked, but errors named
// the sandbox's path: files.read('/home/user/a.txt') (or 'a.txt') that
// is not there said File not found: /workspace/a.txt. The message names
// it as asked now; an error about a path asked as /workspace, /tmp or
// outside the roots is as it was, and so is one that is not boxkite's.
func TestAskedError(t *testing.T) {
	notFound := func(p string) error {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "File not found: %s", p)
	}
	other := errors.New("File not found: /workspace/a.txt")
	for _, tt := range []struct {
		err   error
		asked string
		want  string
	}{
		{notFound("/workspace/a.txt"), "/home/user/a.txt", "File not found: /home/user/a.txt"},
		{notFound("/workspace/d é/a b.txt"), "/home/user/d é/a b.txt", "File not found: /home/user/d é/a b.txt"},
		{notFound("/workspace"), "/home/user", "File not found: /home/user"},
		{notFound("/workspace/a.txt"), "/workspace/a.txt", "File not found: /workspace/a.txt"},
		{notFound("/tmp/a.txt"), "/tmp/a.txt", "File not found: /tmp/a.txt"},
		{other, "/home/user/a.txt", "File not found: /workspace/a.txt"},
	} {
		got := askedError(tt.err, tt.asked)
		if got.Error() != tt.want && got.(*api.Error).Message != tt.want {
			t.Errorf("askedError(%q, %q) = %q, want %q", tt.err, tt.asked, got, tt.want)
		}
	}
	e := api.Errorf(http.StatusNotFound, api.CodeNotFound, "File not found: /workspace/a.txt")
	_ = askedError(e, "/home/user/a.txt")
	if e.Message != "File not found: /workspace/a.txt" {
		t.Errorf("askedError changed the error it was given: %q", e.Message)
	}
}

// cwdSession refuses every command's cwd as the sidecar does.
type cwdSession struct{ ptySession }

func (s *cwdSession) Interactive(_ context.Context, req api.InteractiveRequest) (*websocket.Conn, error) {
	if strings.HasSuffix(req.Cwd, ".txt") {
		return nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "cwd is not a directory: %s", req.Cwd).WithHint("give a directory, not a file")
	}
	return nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "cwd does not exist: %s", req.Cwd).WithHint("make the directory first")
}

// TestCwdErrorAsAsked: commands.run(…, {cwd: 'nowhere'}) said cwd is
// not a directory: /workspace/nowhere. A cwd that is not there is refused
// as envd refuses it (packages/envd, process handler: invalid_argument
// "cwd '%s' does not exist", the path resolved); one that is a file keeps
// boxkite's message, named as asked.
func TestCwdErrorAsAsked(t *testing.T) {
	s := processService{h: &Handler{log: slog.New(slog.DiscardHandler)}}
	for cwd, want := range map[string]string{
		"nowhere":            "cwd '/home/user/nowhere' does not exist",
		"~/nowhere":          "cwd '/home/user/nowhere' does not exist",
		"/home/user/nowhere": "cwd '/home/user/nowhere' does not exist",
		"/workspace/nowhere": "cwd '/workspace/nowhere' does not exist",
		"a.txt":              "cwd is not a directory: /home/user/a.txt (give a directory, not a file)",
	} {
		ctx := context.WithValue(context.Background(), sessionKey{}, Session(&cwdSession{}))
		req := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: "/bin/bash", Cwd: &cwd}})
		err := s.Start(ctx, req, nil)
		if ce := new(connect.Error); !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument || ce.Message() != want {
			t.Errorf("cwd %q: %v, want invalid_argument %q", cwd, err, want)
		}
	}
}
