package sidecar

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestExecSignal sends a streamed exec, named by its answer's X-Exec-Id,
// signals: the command's process group gets them (its trap runs, the
// stream ends with the exit code the trap chose); an unknown signal is
// 422, and an exec that ended is 404.
func TestExecSignal(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/exec",
		strings.NewReader(`{"command":"trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.1; done","timeout":120}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	id := resp.Header.Get(api.HeaderExecID)
	if len(id) != 24 {
		t.Fatalf("%s = %q, want an exec id", api.HeaderExecID, id)
	}
	signal := func(body string) (int, []byte) {
		t.Helper()
		return call(t, http.MethodPost, url+"/exec/"+id+"/signal", authed, body)
	}
	lines := bufio.NewScanner(resp.Body)
	var stdout strings.Builder
	var exit *api.ExecEvent
	for lines.Scan() {
		var e api.ExecEvent
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", lines.Bytes(), err)
		}
		stdout.WriteString(e.Data)
		if e.Type == api.EventExit {
			exit = &e
			break
		}
		if e.Data != "ready\n" {
			continue
		}
		if code, body := signal(`{"signal":"SIGSTOP"}`); code != http.StatusUnprocessableEntity {
			t.Errorf("signal SIGSTOP = %d %s, want 422", code, body)
		}
		if code, body := signal(`{"signal":"SIGINT"}`); code != http.StatusOK || !strings.Contains(string(body), `"signal":"SIGINT"`) {
			t.Errorf("signal SIGINT = %d %s, want 200", code, body)
		}
	}
	if exit == nil || exit.ExitCode != 3 || !strings.Contains(stdout.String(), "got-int") {
		t.Fatalf("the stream ended with %+v, stdout %q; want the trap's exit 3 and its output", exit, stdout.String())
	}
	if code, body := signal(`{"signal":"SIGINT"}`); code != http.StatusNotFound || decodeError(t, body).Hint == "" {
		t.Errorf("signal after the end = %d %s, want 404 with a hint", code, body)
	}
}
