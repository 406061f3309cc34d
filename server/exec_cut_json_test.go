package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestExecJSONCutIsAudited: a JSON exec cut short after its command
// reached the sidecar (the sidecar died, the sandbox was deleted under
// it) is in the log as a cut stream is, without an exit code and with the
// error the client got, and the log verifies to its head: the command ran,
// for all anyone knows (session 18, durable18 finding 1: a `dd` cut by a
// freeze wrote 95 MB and left no entry).
func TestExecJSONCutIsAudited(t *testing.T) {
	tests := []struct {
		name     string
		cut      func(e *env, id string)
		wantCode string
	}{
		{"the sidecar died", func(e *env, _ string) {
			e.Sidecar.Listener.Close()
			e.Sidecar.CloseClientConnections()
		}, api.CodeSandboxFailed}, // the fake driver has no probe to tell a loss
		{"the sandbox was deleted", func(e *env, id string) {
			if resp, body := e.do("DELETE", sandboxPath(id), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
				t.Errorf("delete during the exec = %d %s", resp.StatusCode, body)
			}
		}, api.CodeConflict}, // "was destroyed while the call ran"
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, server.Config{})
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			running := make(chan struct{})
			e.Sidecar.ExecFunc = func(_ http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
				close(running)
				<-r.Context().Done() // runs until it is cut
			}
			type answer struct {
				status int
				body   []byte
				err    error
			}
			done := make(chan answer, 1)
			go func() {
				req, _ := http.NewRequest("POST", e.URL+sandboxPath(sb.ID, "/exec"), strings.NewReader(`{"command":"dd if=/dev/zero of=big"}`))
				req.Header.Set("Authorization", "Bearer "+e.KeyA)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				done <- answer{resp.StatusCode, body, err}
			}()
			<-running
			tt.cut(e, sb.ID)
			got := <-done
			if got.err != nil {
				t.Fatalf("exec: %v", got.err)
			}
			var env api.ErrorEnvelope
			mustUnmarshal(t, got.body, &env)
			if got.status < 400 || env.Error.Code == "" {
				t.Fatalf("cut exec = %d %s, want an error envelope", got.status, got.body)
			}
			want := tt.wantCode
			if env.Error.Code != want {
				t.Errorf("cut exec answered %s, want %s", env.Error.Code, want)
			}
			page := getLog(t, e, sb.ID, "?limit=500")
			var execs []api.LogEntry
			for _, en := range page.Entries {
				if en.Operation == "exec" {
					execs = append(execs, en)
				}
			}
			if len(execs) != 1 {
				t.Fatalf("log has %d exec entries, want the cut one: %+v", len(execs), page.Entries)
			}
			var detail map[string]any
			mustUnmarshal(t, execs[0].Detail, &detail)
			if execs[0].ExitCode != nil || detail["error"] != want || detail["command"] != "dd if=/dev/zero of=big" {
				t.Errorf("entry: exit %v detail %v, want no exit code, the command and error %s", execs[0].ExitCode, detail, want)
			}
			if err := api.VerifyLog(page.Entries, page.HeadSeq, page.HeadHash); err != nil {
				t.Errorf("VerifyLog: %v", err)
			}
		})
	}
}
