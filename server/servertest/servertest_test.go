package servertest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

func do(t *testing.T, s *servertest.Server, method, path string, body any, accept string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.BaseURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

// TestEndToEnd drives the real stack: HTTP → control plane → local driver
// → jailed sidecar → /bin/sh, then survives a control-plane crash.
func TestEndToEnd(t *testing.T) {
	s := servertest.New(t)

	resp, body := do(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{Label: "e2e"}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	if err := json.Unmarshal(body, &sb); err != nil {
		t.Fatal(err)
	}
	execPath := "/v1/sandboxes/" + sb.ID + "/exec"

	resp, body = do(t, s, "POST", execPath, api.ExecRequest{Command: "echo $((1+1)); echo oops >&2; exit 3"}, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var res api.ExecResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "2\n" || res.Stderr != "oops\n" || res.ExitCode != 3 {
		t.Errorf("exec = %+v, want stdout 2, stderr oops, exit 3", res)
	}

	resp, body = do(t, s, "POST", execPath, api.ExecRequest{Command: "echo a; echo b >&2"}, api.ContentTypeNDJSON)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("streaming exec: %d %s", resp.StatusCode, body)
	}
	var events []api.ExecEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var ev api.ExecEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad event %q: %v", sc.Text(), err)
		}
		events = append(events, ev)
	}
	if len(events) == 0 || events[len(events)-1].Type != api.EventExit {
		t.Errorf("stream %s does not end with an exit event", body)
	}

	// A crash of the control plane does not take the sandbox with it.
	s.Restart(t)
	resp, body = do(t, s, "POST", execPath, api.ExecRequest{Command: "echo still here"}, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "still here") {
		t.Fatalf("exec after restart: %d %s", resp.StatusCode, body)
	}

	resp, body = do(t, s, "DELETE", "/v1/sandboxes/"+sb.ID, nil, "")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, s, "POST", execPath, api.ExecRequest{Command: "true"}, "")
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("exec after delete: %d %s, want 409", resp.StatusCode, body)
	}
}
