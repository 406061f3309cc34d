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
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"` // 0.1..120, else 422; default 30
}

// PTYExecResult is pty-exec's answer: what the terminal showed (at most
// MaxPTYOutput bytes), and the exit code, null when it timed out.
type PTYExecResult struct {
	Output   string `json:"output"`
	ExitCode *int   `json:"exit_code"`
	TimedOut bool   `json:"timed_out"`
}

// The browser tools' routes (…/browser/navigate|exec|screenshot|close): a
// headless Chromium in the sandbox, driven over the DevTools protocol.
// Failures of the page are reported in Error with a 200, as the
// reference does; the route fails only for a bad request.
const (
	DefaultBrowserNavigateTimeout = 30
	DefaultBrowserExecTimeout     = 10
	MaxBrowserTimeout             = 120
	MaxScreenshotBytes            = 5 << 20
)

// BrowserNavigateRequest is the body of POST …/browser/navigate.
type BrowserNavigateRequest struct {
	URL            string `json:"url"`
	WaitUntil      string `json:"wait_until,omitempty"`      // load (default), domcontentloaded, networkidle or commit
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"` // default 30; 1..MaxBrowserTimeout, others refused (422)
}

// BrowserNavigateResult is its answer.
type BrowserNavigateResult struct {
	Title  string  `json:"title"`
	URL    string  `json:"url"`
	Status int     `json:"status"` // of the main document; 0 when unknown
	Error  *string `json:"error"`
}

// BrowserExecRequest is the body of POST …/browser/exec: JavaScript run in
// the page; a promise is awaited.
type BrowserExecRequest struct {
	Script         string `json:"script"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"` // default 10; 1..MaxBrowserTimeout, others refused (422)
}

// BrowserExecResult is its answer: the value as JSON.
type BrowserExecResult struct {
	Result any     `json:"result"`
	Error  *string `json:"error"`
}

// BrowserScreenshotRequest is the body of POST …/browser/screenshot.
type BrowserScreenshotRequest struct {
	FullPage bool `json:"full_page,omitempty"`
}

// BrowserScreenshotResult is its answer: a PNG (at most
// MaxScreenshotBytes, never cut), base64.
type BrowserScreenshotResult struct {
	ImageBase64 string  `json:"image_base64"`
	Error       *string `json:"error"`
}

// BrowserCloseResult is the answer of POST …/browser/close.
type BrowserCloseResult struct {
	Status string `json:"status"` // closed, or not_running
}
