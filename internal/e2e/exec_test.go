package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestExecCaps checks exec's output caps and timeout in a real jail: a
// stream past the cap is cut at exactly the cap while the command runs to
// its end, and a timeout answers 124.
func TestExecCaps(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	tests := []struct {
		name              string
		req               api.ExecRequest
		stdoutLen         int
		stderrLen         int
		exitCode          int // checked when checkExit
		checkExit         bool
		truncated         bool
		stdout, stderrHas string
	}{
		{
			name: "2 MiB of stdout", req: api.ExecRequest{Command: `head -c 2097152 /dev/zero | tr '\0' x; echo end >&2; exit 4`},
			stdoutLen: api.DefaultExecOutput, stderrLen: 4, exitCode: 4, checkExit: true, truncated: true,
		},
		{
			name: "2 MiB of stderr", req: api.ExecRequest{Command: `head -c 2097152 /dev/zero | tr '\0' y >&2`},
			stderrLen: api.DefaultExecOutput, checkExit: true, truncated: true,
		},
		{
			name: "just at the caps", req: api.ExecRequest{Command: `head -c 1048576 /dev/zero | tr '\0' x; head -c 1048576 /dev/zero | tr '\0' y >&2`},
			stdoutLen: api.DefaultExecOutput, stderrLen: api.DefaultExecOutput, checkExit: true,
		},
		{
			name: "timeout", req: api.ExecRequest{Command: "echo started; sleep 30", Timeout: 1},
			exitCode: api.ExitCodeTimeout, checkExit: true, stderrHas: "Command timed out after 1s", stdoutLen: -1,
		},
		{
			name: "exit code", req: api.ExecRequest{Command: "echo out; echo err >&2; exit 7"},
			exitCode: 7, checkExit: true, stdout: "out\n", stderrHas: "err\n", stdoutLen: -1, stderrLen: -1,
		},
		{
			name: "stdin, env and cwd", req: api.ExecRequest{Command: `read l; echo "$l $GREETING $(pwd)"`, Stdin: "hi\n", Env: map[string]string{"GREETING": "there"}, Cwd: "/tmp"},
			checkExit: true, stdout: "hi there /tmp\n", stdoutLen: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb := sb.in(t)
			status, body := sb.route("POST", "/exec", tt.req)
			if status != http.StatusOK {
				t.Fatalf("exec = %d %s", status, body)
			}
			var res api.ExecResult
			mustDecode(t, body, &res)
			if tt.stdoutLen >= 0 && len(res.Stdout) != tt.stdoutLen {
				t.Errorf("stdout is %d bytes, want %d", len(res.Stdout), tt.stdoutLen)
			}
			if tt.stderrLen >= 0 && len(res.Stderr) != tt.stderrLen && tt.stderrHas == "" {
				t.Errorf("stderr is %d bytes, want %d", len(res.Stderr), tt.stderrLen)
			}
			if res.Truncated != tt.truncated {
				t.Errorf("truncated = %v, want %v (%+v)", res.Truncated, tt.truncated, res.ExecOutputInfo)
			}
			if tt.checkExit && res.ExitCode != tt.exitCode {
				t.Errorf("exit code %d, want %d (stderr %.200q)", res.ExitCode, tt.exitCode, res.Stderr)
			}
			if tt.stdout != "" && res.Stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", res.Stdout, tt.stdout)
			}
			if !strings.Contains(res.Stderr, tt.stderrHas) {
				t.Errorf("stderr %.300q, want it to contain %q", res.Stderr, tt.stderrHas)
			}
		})
	}
}
