package tools

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestTimeoutRefused: every agent tool with a timeout (or start_process's
// max_runtime_seconds) refuses a value out of its range with the REST
// API's words and a hint naming the default, and calls nothing; it does
// not clamp the value. MCP's exec says the same (mcpserver's tests).
func TestTimeoutRefused(t *testing.T) {
	ts := append(All(), Optional()...)
	tests := []struct {
		tool, base, param string
		lo, hi, dflt      string
	}{
		{"bash_tool", `"command":"x"`, "timeout", "1", "600", "120"},
		{"python_interpreter", `"code":"x"`, "timeout", "1", "300", "30"},
		{"node_interpreter", `"code":"x"`, "timeout", "1", "300", "30"},
		{"http_request", `"method":"GET","url":"https://x/"`, "timeout", "1", "60", "15"},
		{"run_tests", `"command":"go test ./..."`, "timeout", "1", "600", "300"},
		{"start_process", `"command":"x"`, "max_runtime_seconds", "1", "14400", "3600"},
		{"watch_directory", `"path":"/"`, "timeout_seconds", "0.1", "60", "10"},
		{"pty_exec", `"command":"x"`, "timeout_seconds", "0.1", "120", "30"},
		{"browser_navigate", `"url":"http://localhost/"`, "timeout_seconds", "1", "120", "30"},
		{"browser_exec", `"script":"1"`, "timeout_seconds", "1", "120", "10"},
	}
	for _, tt := range tests {
		tl, ok := Lookup(ts, tt.tool)
		if !ok {
			t.Fatalf("no tool %q", tt.tool)
		}
		for _, v := range []string{"0", "-3", "99999"} {
			t.Run(tt.tool+"="+v, func(t *testing.T) {
				f := &fake{}
				got := tl.Call(t.Context(), f, json.RawMessage(fmt.Sprintf(`{%s,%q:%s}`, tt.base, tt.param, v)))
				want := fmt.Sprintf("Error: %s must be between %s and %s seconds, got %s\nHint: omit %s for the default of %s seconds.",
					tt.param, tt.lo, tt.hi, v, tt.param, tt.dflt)
				if got != want {
					t.Errorf("text:\n%s\nwant:\n%s", got, want)
				}
				if len(f.calls) != 0 {
					t.Errorf("calls %v, want none", f.calls)
				}
			})
		}
	}
}
