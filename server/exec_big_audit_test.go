package server_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// A JSON exec whose answer is larger than the proxy's capture is audited
// with its exit code and output counts all the same.
func TestExecBigJSONAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	const size = 12 << 20
	e.Sidecar.ExecFunc = execAnswer(t, api.ExecResult{
		ExitCode: 3, Stdout: string(bytes.Repeat([]byte("x"), size)), DurationMS: 1,
		ExecOutputInfo: api.ExecOutputInfo{Truncated: true, StdoutBytes: size + 5, OutputLimitBytes: size},
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, map[string]any{"command": "big", "max_output_bytes": size})
	if resp.StatusCode != http.StatusOK || len(body) < size {
		t.Fatalf("exec: %d, %d bytes", resp.StatusCode, len(body))
	}
	page := getLog(t, e, sb.ID, "?limit=500")
	for _, en := range page.Entries {
		if en.Operation != "exec" {
			continue
		}
		if en.ExitCode == nil || *en.ExitCode != 3 || !en.OutputTruncated {
			t.Errorf("entry: exit %v, truncated %v; want 3, true", en.ExitCode, en.OutputTruncated)
		}
		return
	}
	t.Fatal("no exec entry")
}
