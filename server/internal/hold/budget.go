package hold

import "github.com/boxkite/boxkite/client/api"

// The held-output budget's arithmetic (issue 27, sessions 22 and 23): what
// an answer the control plane holds whole until its audit entry is
// committed reserves of exec.HeldBudget before the sidecar is asked.

// Copies is how many bytes of the control plane's memory a held
// JSON answer may take per byte of its output while it waits for its
// audit entry. Measured by BenchmarkJSONExecHeld since d7204c6 (the
// capture skipped past sidecar.MaxCapture, the buffers sized from
// Content-Length, the scrubbed body handed to the hold, unchanged output
// not re-encoded): a JSON exec of 16 MiB of stdout allocates 16.1 MiB
// when its output has nothing to escape (the hold's one copy) and
// 48.5 MiB when it has a newline every 80 bytes (the hold, the decoded
// string searched for secrets, and the redaction's copy of it): three
// copies at most. The fourth is the room the garbage collector needs
// before a dropped copy's memory is reused, and the JSON escaping the
// bounds leave out (they count output bytes, not the bytes of their JSON).
const Copies = 4

// overhead is what a JSON answer holds besides its output: its other
// members and their quoting.
const overhead = 64 << 10

// Answer is what a JSON answer carrying at most n bytes of output
// reserves of the held-output budget: Copies of it.
func Answer(n int64) int64 {
	return Copies * (n + overhead)
}

// What the answers held whole besides a JSON exec's reserve (Answer of
// the most output the sidecar puts in one; a JSON exec's is
// exec.HeldBound of its max_output_bytes): an interpreter run's
// (python_interpreter, node_interpreter, E2B's /execute) stdout, result
// and error, each at most api.MaxInterpreterOutput bytes, and a process
// output page, at most api.MaxProcessOutput.
const (
	Interpreter   = Copies * InterpreterAnswer
	ProcessOutput = Copies * (api.MaxProcessOutput + overhead)
)

// InterpreterAnswer is the most an interpreter run's JSON answer carries:
// its stdout, result and error and the rest. A streamed run (NDJSON)
// scrubbed on its way out holds one line at a time, which is cut at this
// (scrub.InterpreterNDJSON), so it stays within the same reservation.
const InterpreterAnswer = 3*api.MaxInterpreterOutput + overhead

// StreamLine is the longest line a scrubbed NDJSON stream holds (an
// interpreter run's, a /v1 exec's, scrub.Stream): a longer one cuts the
// stream. It is what a JSON interpreter answer carries at most, 832 KiB,
// so a streamed run stays within hold.Interpreter's reservation; the
// sidecar's lines are far shorter.
const StreamLine = InterpreterAnswer
