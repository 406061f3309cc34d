package envd

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

// fileSession is a ptySession whose sidecar takes file writes.
type fileSession struct {
	ptySession
	puts map[string]string // path: body
}

func (s *fileSession) Sidecar(_ context.Context, method, path string, q url.Values, body io.Reader, _ http.Header) (*http.Response, error) {
	b, _ := io.ReadAll(body)
	if method != http.MethodPut || path != "/files/raw" {
		return &http.Response{StatusCode: http.StatusNotFound, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}
	s.puts[q.Get("path")] = string(b)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(""))}, nil
}

// TestLongCommandFromFile: a command (or its envs) of more than some
// 60 KiB went to the sidecar in its query string and failed, internal:
// the request's headers are larger than 64 KiB; envd runs any the kernel
// takes (128 KiB a word). One whose query would be long is written to a
// file in /tmp, which runs it and removes itself; a short one is sent as
// it was.
func TestLongCommandFromFile(t *testing.T) {
	s := processService{h: &Handler{log: slog.New(slog.DiscardHandler)}}
	long := "echo " + strings.Repeat("a", 100<<10)
	quoted := "echo " + strings.Repeat("'", 20<<10) // 20 KiB that URL-encode to more
	for _, tt := range []struct {
		name string
		cmd  string
		envs map[string]string
		file bool
	}{
		{"short", "echo hi", nil, false},
		{"long", long, nil, true},
		{"long env", "echo $BIG", map[string]string{"BIG": strings.Repeat("b", 100<<10)}, true},
		{"long once encoded", quoted, nil, true},
	} {
		sess := &fileSession{puts: map[string]string{}}
		ctx := context.WithValue(context.Background(), sessionKey{}, Session(sess))
		req := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{
			Cmd: "/bin/bash", Args: []string{"-l", "-c", tt.cmd}, Envs: tt.envs,
		}})
		_ = s.Start(ctx, req, nil)
		if len(sess.started) != 1 {
			t.Fatalf("%s: started %d commands", tt.name, len(sess.started))
		}
		got := sess.started[0].Command
		if !tt.file {
			if len(sess.puts) != 0 || !strings.Contains(got, shellQuote(tt.cmd)) {
				t.Errorf("%s: command %q and %d files, want the command itself", tt.name, got, len(sess.puts))
			}
			continue
		}
		name, ok := strings.CutPrefix(got, ". /tmp/.e2b-command-")
		body := sess.puts["/tmp/.e2b-command-"+name]
		want, _ := shellCommand(req.Msg.GetProcess(), mapWithDefaults(tt.envs))
		if !ok || len(sess.puts) != 1 || body != "rm -f /tmp/.e2b-command-"+name+"\n"+want+"\n" {
			t.Errorf("%s: command %q, files %d (%.80q…), want . of a file that removes itself and runs it", tt.name, got, len(sess.puts), body)
		}
	}
}

// mapWithDefaults is envs with the defaults Start gives a command.
func mapWithDefaults(envs map[string]string) map[string]string {
	out := map[string]string{"HOME": UserHome, "USER": UserName, "LOGNAME": UserName}
	for k, v := range envs {
		out[k] = v
	}
	return out
}
