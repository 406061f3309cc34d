package api

import (
	"encoding/json"
	"time"
)

// Background process statuses, in ProcessOutput.Status and ProcessInfo.Status.
const (
	ProcessRunning = "running"
	ProcessExited  = "exited"  // the command ended by itself
	ProcessStopped = "stopped" // ended by POST …/stop (SIGTERM, then SIGKILL after the grace)
	ProcessKilled  = "killed"  // ended by SIGKILL without grace: the watchdog at max_runtime_seconds, kill-all, or a budget breach
)

// MaxProcessRuntime is the largest max_runtime_seconds a process may ask for (4 h).
const MaxProcessRuntime = 14400

// DefaultProcessRuntime is max_runtime_seconds when a start leaves it out (1 h).
const DefaultProcessRuntime = 3600

// MaxProcessInput is the largest data one POST …/input accepts (10 MiB).
const MaxProcessInput = 10 << 20

// MaxProcessOutput is how much of a background process's merged output
// its sidecar keeps (the newest bytes), and so the most one output page
// (GET …/processes/{pid}/output) carries.
const MaxProcessOutput = 256 << 10

// ProcessStartRequest is the body of POST /process/start.
type ProcessStartRequest struct {
	Command           string `json:"command"`
	Description       string `json:"description,omitempty"`
	MaxRuntimeSeconds int    `json:"max_runtime_seconds,omitempty"` // 1..MaxProcessRuntime; 0 (absent) means DefaultProcessRuntime
	// Restart starts the process again when the sandbox resumes from a
	// filesystem pause (PauseFilesystem), which ends every process.
	Restart bool `json:"restart,omitempty"`
}

// ProcessStarted is the 201 answer to POST /process/start.
type ProcessStarted struct {
	ProcessID string    `json:"process_id"` // "proc_" and 32 hex digits
	Status    string    `json:"status"`
	StartedAt time.Time `json:"started_at"`
}

// ProcessOutput is the answer to GET /process/{id}/output?since_offset=N.
// Offsets count bytes of merged stdout and stderr since the start; only the
// newest bytes are kept, so Truncated says since_offset fell before them and
// StdoutChunk is everything still kept.
type ProcessOutput struct {
	Status      string `json:"status"`
	StdoutChunk string `json:"stdout_chunk"`
	NextOffset  int64  `json:"next_offset"`
	Truncated   bool   `json:"truncated"`
	ExitCode    *int   `json:"exit_code,omitempty"` // once the process ended
}

// Process stream (GET /process/{id}/stream, text/event-stream) event types,
// both as the SSE event name and as ProcessEvent.Type. An error event
// (ProcessEventError, Error set, as an exec stream's EventError) is the
// control plane's, and ends the stream without an exit event: a scrubbed
// stream whose event in progress went over the cap it holds.
const (
	ProcessEventOutput = "output"
	ProcessEventExit   = "exit"
	ProcessEventError  = "error"
)

// ProcessEvent is the data of one server-sent event of a process stream:
// output events as output happens, then one exit event, or an error event
// that ends the stream instead.
type ProcessEvent struct {
	Type        string `json:"type"`
	StdoutChunk string `json:"stdout_chunk,omitempty"` // output
	NextOffset  int64  `json:"next_offset,omitempty"`  // output
	Truncated   bool   `json:"truncated,omitempty"`    // output
	Status      string `json:"status,omitempty"`       // exit
	ExitCode    *int   `json:"exit_code,omitempty"`    // exit
	Error       *Error `json:"error,omitempty"`        // error
}

// ProcessInputRequest is the body of POST /process/{id}/input.
type ProcessInputRequest struct {
	Data string `json:"data"`
}

// ProcessInputResult is the answer to POST /process/{id}/input.
type ProcessInputResult struct {
	BytesWritten int `json:"bytes_written"`
}

// ProcessStopResult is the answer to POST /process/{id}/stop.
type ProcessStopResult struct {
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code"`
}

// ProcessInfo is one entry of GET /process.
type ProcessInfo struct {
	ProcessID   string    `json:"process_id"`
	Command     string    `json:"command"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	StartedAt   time.Time `json:"started_at"`
	ExitCode    *int      `json:"exit_code"` // null while running
	// Restart and MaxRuntimeSeconds are as started.
	Restart           bool `json:"restart,omitempty"`
	MaxRuntimeSeconds int  `json:"max_runtime_seconds,omitempty"`
}

// Resumed processes' fates, in ResumedProcess.Status.
const (
	ProcessRestarted = "restarted" // started again (it was started with restart)
	ProcessEnded     = "ended"     // ended by the filesystem pause, not started again
)

// ResumedProcess is what became of one background process that ran when
// the sandbox was paused with PauseFilesystem.
type ResumedProcess struct {
	ProcessID    string `json:"process_id"` // as it was before the pause
	Command      string `json:"command"`
	Status       string `json:"status"`                   // ProcessRestarted or ProcessEnded
	NewProcessID string `json:"new_process_id,omitempty"` // when restarted
	Error        string `json:"error,omitempty"`          // when it could not be started again
}

// ProcessList is the answer to GET /process.
type ProcessList struct {
	Processes []ProcessInfo `json:"processes"`
}

// KillAllResult is the answer to POST /process/kill-all.
type KillAllResult struct {
	Killed int `json:"killed"`
}

// Interpreter timeouts, in seconds; requests outside the range are clamped
// by the Python interpreter and refused by the Node.js one.
const (
	DefaultInterpreterTimeout = 30
	MaxInterpreterTimeout     = 300
)

// MaxInterpreterOutput bounds each of an interpreter run's stdout (stdout
// and stderr together), result and error: the sidecar's drivers cut
// what is longer (a result or an error is cut to that many characters,
// marked "... (truncated)").
const MaxInterpreterOutput = 256 << 10

// InterpreterExecRequest is the body of POST /interpreter/exec.
type InterpreterExecRequest struct {
	Code    string `json:"code"`
	Timeout int    `json:"timeout,omitempty"` // seconds; 0 means the default; 1..MaxInterpreterTimeout, clamped by Python's, refused (422) by Node.js's
}

// InterpreterExecResult is the answer to POST /interpreter/exec.
type InterpreterExecResult struct {
	Stdout    string  `json:"stdout"`    // stdout and stderr together, in order, capped at 256 KiB
	Result    *string `json:"result"`    // repr of the last expression; null when none or None
	Error     *string `json:"error"`     // the traceback; null on success
	Truncated bool    `json:"truncated"` // Stdout hit its cap
}

// InterpreterEvent is one line of the sidecar's POST /interpreter/exec
// answer to a request that accepts application/x-ndjson (the E2B
// interface's runCode): the output as the code writes it, then one last
// line with the outcome.
type InterpreterEvent struct {
	Stream string                 `json:"stream,omitempty"` // "stdout" or "stderr": a piece of output, in Text
	Text   string                 `json:"text,omitempty"`
	End    *InterpreterExecResult `json:"end,omitempty"`    // the outcome; its Stdout is empty (the output came before)
	Failed *Error                 `json:"failed,omitempty"` // instead of End: the interpreter failed (timed out, crashed, reset)
}

// InterpreterReset is the answer to POST /interpreter/reset.
type InterpreterReset struct {
	Status string `json:"status"` // "reset"
}

// InterpreterStatus is the answer to GET /interpreter/status.
type InterpreterStatus struct {
	Running     bool       `json:"running"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	IdleSeconds *float64   `json:"idle_seconds,omitempty"`
}

// Languages POST /lsp/start accepts.
const (
	LanguageGo         = "go"
	LanguagePython     = "python"
	LanguageTypeScript = "typescript"
)

// LSPStartRequest is the body of POST /lsp/start.
type LSPStartRequest struct {
	Language string `json:"language"`
}

// LSPStarted is the 201 answer to POST /lsp/start.
type LSPStarted struct {
	LSPID string `json:"lsp_id"`
}

// LSPOpenRequest is the body of POST /lsp/{id}/open: the full text of a
// document as the language server should see it.
type LSPOpenRequest struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// LSPCompletionRequest is the body of POST /lsp/{id}/completion; Line and
// Character are 0-based, as in LSP.
type LSPCompletionRequest struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Character int    `json:"character"`
}

// LSPCompletionResult is the answer to POST /lsp/{id}/completion: the
// server's CompletionItems unchanged, whether it sent a list or a CompletionList.
type LSPCompletionResult struct {
	Items []json.RawMessage `json:"items"`
}

// LSPStatus is the answer to POST /lsp/{id}/open ("opened") and …/stop ("stopped").
type LSPStatus struct {
	Status string `json:"status"`
}

// PTYControlResize is the Type of a PTY WebSocket's control message that
// resizes the terminal.
const PTYControlResize = "resize"

// PTYControlDetach is the Type of a takeover WebSocket's control message
// that ends the attachment once what came before it was typed: the server
// closes normally (reason "detached") after the output it already relayed,
// and the shell keeps running. An end of input, for a client that has no
// other way to say so (an SSH session with no PTY and no command).
const PTYControlDetach = "detach"

// PTYControlExit is the Type of a takeover WebSocket's control message
// from the terminal's side: its shell exited, with ExitCode (and Signal,
// when a signal ended it). It comes after the shell's last output, just
// before the close (normal, reason "shell exited"); a sidecar older than
// it closes without one. The bastion passes it on as the SSH session's
// exit status.
const PTYControlExit = "exit"

// PTYControl is a text frame on a PTY WebSocket; binary frames are terminal bytes.
type PTYControl struct {
	Type string `json:"type"`           // PTYControlResize, PTYControlDetach or PTYControlExit
	Cols int    `json:"cols,omitempty"` // resize: 1..1000
	Rows int    `json:"rows,omitempty"` // resize: 1..1000
	// ExitCode is, on an exit, the shell's exit status: 128+Signal when a
	// signal ended it, as a shell reports it.
	ExitCode *int `json:"exit_code,omitempty"`
	// Signal is, on an exit, the number of the signal that ended the
	// shell; 0 when it exited.
	Signal int `json:"signal,omitempty"`
	// UntilIdle, on a detach, waits until the shell has run what was typed
	// (it waits for input again, with none unread, and no job in the
	// foreground) and sends all the output until then before the close: a
	// script's commands' whole output, as sshd's shell gives at EOF.
	UntilIdle bool `json:"until_idle,omitempty"`
}

// CodeSessionBudgetExceeded is the error code, with HTTP 403, of a budgeted
// call (exec, interpreter, process start, LSP) once a sandbox used up its
// exec budget; the Details are a BudgetExceeded and the state is sticky.
const CodeSessionBudgetExceeded = "session_budget_exceeded"

// Budget reasons in BudgetExceeded.Reason.
const (
	BudgetReasonExecCount   = "exec_count"
	BudgetReasonExecSeconds = "exec_seconds"
)

// BudgetExceeded is the Details of a session_budget_exceeded error.
type BudgetExceeded struct {
	Reason string  `json:"reason"`
	Limit  int64   `json:"limit"`
	Used   float64 `json:"used"` // calls, or seconds
}
