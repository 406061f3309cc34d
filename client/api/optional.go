package api

// The opt-in tools' routes (issue 23): PTY commands and the persistent
// Node.js interpreter.

// Limits of pty-exec (reference §2.3 /pty-exec).
const (
	DefaultPTYTimeout = 30.0
	MinPTYTimeout     = 0.1
	MaxPTYTimeout     = 120.0
	MaxPTYOutput      = 256 << 10
)

// PTYExecRequest is the body of POST /v1/sandboxes/{id}/pty-exec: Command
// is split into words like a shell would (quotes and backslashes), never
// run by one; InputBytes (base64) is typed into the terminal.
type PTYExecRequest struct {
	Command        string  `json:"command"`
	InputBytes     string  `json:"input_bytes,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"` // 0.1..120; default 30
}

// PTYExecResult is pty-exec's answer: what the terminal showed (at most
// MaxPTYOutput bytes), and the exit code, null when it timed out.
type PTYExecResult struct {
	Output   string `json:"output"`
	ExitCode *int   `json:"exit_code"`
	TimedOut bool   `json:"timed_out"`
}
