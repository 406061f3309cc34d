package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestExecClientGoneIsAudited: an exec whose client hangs up after the
// command reached the sidecar is in the log, without an exit code and
// with detail.error client_gone, JSON or streamed, and the log verifies:
// a client that disconnects must not run commands the log never sees
// (session 18, audit18 finding 2: `echo ran > gone.txt && sleep 30` cut
// by curl --max-time left the file and no entry).
func TestExecClientGoneIsAudited(t *testing.T) {
	for _, accept := range []string{"application/json", api.ContentTypeNDJSON} {
		t.Run(accept, func(t *testing.T) {
			e := newEnv(t, server.Config{})
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			running := make(chan struct{})
			e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
				if accept == api.ContentTypeNDJSON {
					w.Header().Set("Content-Type", api.ContentTypeNDJSON)
					json.NewEncoder(w).Encode(api.ExecEvent{Type: api.EventStdout, Data: "ran\n"})
					w.(http.Flusher).Flush()
				}
				close(running)
				<-r.Context().Done() // runs until the server's call ends
			}
			ctx, hangUp := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, "POST", e.URL+sandboxPath(sb.ID, "/exec"), strings.NewReader(`{"command":"echo ran > gone.txt && sleep 30"}`))
				req.Header.Set("Authorization", "Bearer "+e.KeyA)
				req.Header.Set("Accept", accept)
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = resp.Body.Read(make([]byte, 1)) // the stream, until the hang-up
					resp.Body.Close()
				}
				done <- err
			}()
			<-running
			hangUp()
			<-done
			// The server audits after it notices the hang-up: wait for the
			// entry (the deadline is only a hang guard).
			deadline := time.Now().Add(30 * time.Second)
			var execs []api.LogEntry
			var page api.LogPage
			for len(execs) == 0 && time.Now().Before(deadline) {
				page = getLog(t, e, sb.ID, "?limit=500")
				for _, en := range page.Entries {
					if en.Operation == "exec" {
						execs = append(execs, en)
					}
				}
				if len(execs) == 0 {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if len(execs) != 1 {
				t.Fatalf("log has %d exec entries, want the one whose client went away: %+v", len(execs), page.Entries)
			}
			var detail map[string]any
			mustUnmarshal(t, execs[0].Detail, &detail)
			if execs[0].ExitCode != nil || detail["error"] != "client_gone" || detail["command"] != "echo ran > gone.txt && sleep 30" {
				t.Errorf("entry: exit %v detail %v, want no exit code, the command and error client_gone", execs[0].ExitCode, detail)
			}
			if err := api.VerifyLog(page.Entries, page.HeadSeq, page.HeadHash); err != nil {
				t.Errorf("VerifyLog: %v", err)
			}
		})
	}
}
