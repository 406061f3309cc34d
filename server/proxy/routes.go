package proxy

import (
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the proxied routes (the table of proxyRoutes), documented
// by docs. They take an API key; event streams also take ?api_key=.
func (s *Service) Routes() []httpx.Route {
	var out []httpx.Route
	for _, rt := range proxyRoutes() {
		d := docs[rt.method+" "+rt.path]
		d.Pattern = rt.method + " /v1/sandboxes/{id}" + rt.path
		if rt.flags&needPath != 0 {
			d.Query = append(d.Query, "path")
		}
		d.Upload = rt.body == bodyStream
		cred := httpx.CredAPIKey
		if rt.flags&queryKey != 0 {
			cred = httpx.CredAPIKeyQuery
		}
		out = append(out, httpx.Route{
			RouteDoc: d, Cred: cred, Handler: s.handler(rt),
			// A streamed upload is never deduplicated (Idempotency-Key).
			Streaming: rt.method == http.MethodPost && rt.body == bodyStream,
			// The sidecar refuses a ?path= that is not UTF-8 itself, 400
			// bad_request as the reference does, alike on every store.
			OwnText: true,
		})
	}
	return out
}

// bodyKind says how a proxied route treats the request body.
type bodyKind int

const (
	bodyNone   bodyKind = iota // nothing is sent
	bodyJSON                   // read whole (≤ maxExecBody, the sidecar's own limit), sent unchanged, read for the audit detail
	bodyStream                 // streamed through unread and counted: file and archive uploads
)

// proxyRoute is one control-plane route answered by the sandbox's sidecar.
// Requests and answers pass through unchanged: the sidecar validates,
// clamps and shapes errors, so every layer behaves identically. The
// control plane only checks what it must to pick the route (ids, ?path=),
// and writes the audit entry once the operation succeeded (2xx).
type proxyRoute struct {
	method  string
	path    string // under /v1/sandboxes/{id}
	sidecar string // the sidecar's path; {name} is the public path's wildcard
	op      string // audit operation; "" for reads of state that change nothing (not audited)
	body    bodyKind
	timeout time.Duration // 0: as long as the client stays (transfers, streams)
	flags   routeFlags
	detail  func(x *exchange) map[string]any
}

// routeFlags are the rarer properties of a proxyRoute.
type routeFlags int

const (
	needPath      routeFlags = 1 << iota // ?path= is required
	queryKey                             // ?api_key= is accepted (event streams)
	checkCommand                         // the body's "command" must pass the account's allowlist
	checkCode                            // the body's "code" runs as python3 -c, which the allowlist must allow
	checkNodeCode                        // the body's "code" runs as node -e, which the allowlist must allow
	// writes: what the operation wrote is flushed to the host's storage
	// before it is acknowledged (DiskSyncer), a 507 if it cannot be.
	writes
	// flushed: the sidecar flushed what it wrote before answering 2xx
	// (docs/files.md, "Durability and full disks": the temp file and every
	// directory that gained an entry fsynced, an archive's filesystems
	// syncfs'd), and a failed flush is its error answer. The server then
	// does not flush the disk again (issue 27): a syncfs right after those
	// fsyncs finds none of this write's data or metadata left to flush, so
	// it could report no error about it, and it cost a write a flush of
	// the loop device and the forced write-back of the journal's metadata
	// (5 → 4 flushes and 11 → 5 writes of the loop device per 4 KiB
	// upload, bench/issue27/session7-files7.md). A failed write (5xx)
	// still goes through BrokenDisk, which flushes to tell a full host.
	flushed
	// hostFlush: with a driver whose disk flush reaches every filesystem
	// the sandbox keeps data on (model.FileFlusher), the sidecar writes
	// the file out and renames it without fsyncing
	// (api.HeaderSidecarHostFlush), and the server flushes the disk beside
	// the audit entry's commit, as for an exec (audit.AppendStored): one
	// journal commit of the sandbox's disk that overlaps the entry's,
	// where the sidecar's fsync came before it (issue 27's step 63).
	hostFlush
	// upload: writes data the caller sends, refused (507) while the host
	// is below its free-space watermark.
	upload
	// The answer carries command output, scrubbed of secrets (scrubber):
	scrubsProcessOutput // a process output page
	scrubsProcessStream // a process's event stream
	scrubsInterpreter   // an interpreter result
)

// Timeouts of proxied calls: the sidecar's own limit for the operation,
// plus room for it to answer.
const (
	opTimeout          = 2 * time.Minute                 // file and process operations (grep stops itself at 10 s)
	watchTimeout       = 60*time.Second + 30*time.Second // watch long-polls up to 60 s
	interpreterTimeout = api.MaxInterpreterTimeout*time.Second + 30*time.Second
	ptyTimeout         = api.MaxPTYTimeout*time.Second + 30*time.Second
	browserTimeout     = api.MaxBrowserTimeout*time.Second + 60*time.Second // and Chromium's start
)

// proxyRoutes is the sandbox tool surface of reference §3.4, mapped onto
// the sidecar's routes (§2.3), with the audit detail of each. Columns:
// method, public path, sidecar path, audit operation, body, timeout, flags, detail.
func proxyRoutes() []proxyRoute {
	return []proxyRoute{
		{"POST", "/files", "/file-create", "file_create", bodyJSON, opTimeout, upload | writes | flushed | hostFlush, fileCreateDetail},
		{"POST", "/files/view", "/view", "view", bodyJSON, opTimeout, 0, viewDetail},
		{"POST", "/files/str-replace", "/str-replace", "str_replace", bodyJSON, opTimeout, writes | flushed | hostFlush, strReplaceDetail},
		{"POST", "/files/ls", "/ls", "ls", bodyJSON, opTimeout, 0, lsDetail},
		{"POST", "/files/glob", "/glob", "glob", bodyJSON, opTimeout, 0, globDetail},
		{"POST", "/files/grep", "/grep", "grep", bodyJSON, opTimeout, 0, grepDetail},
		{"POST", "/files/watch", "/watch", "watch", bodyJSON, watchTimeout, 0, watchDetail},
		{"POST", "/files/present", "/present-files", "present_files", bodyJSON, opTimeout, 0, presentDetail},
		{"PUT", "/files/raw", "/files/raw", "file_upload", bodyStream, 0, needPath | upload | writes | flushed | hostFlush, transferDetail},
		{"GET", "/files/raw", "/files/raw", "file_download", bodyNone, 0, needPath, transferDetail},
		{"POST", "/files/archive", "/files/archive", "archive_upload", bodyStream, 0, needPath | upload | writes | flushed, transferDetail},
		{"GET", "/files/archive", "/files/archive", "archive_download", bodyNone, 0, needPath, transferDetail},

		{"POST", "/exec/{exec_id}/signal", "/exec/{exec_id}/signal", "exec_signal", bodyJSON, opTimeout, 0, execSignalDetail},

		{"POST", "/processes", "/process/start", "start_process", bodyJSON, opTimeout, checkCommand, startProcessDetail},
		{"GET", "/processes", "/process", "", bodyNone, opTimeout, 0, nil},
		{"POST", "/processes/kill-all", "/process/kill-all", "kill_all_processes", bodyNone, opTimeout, 0, killAllDetail},
		{"GET", "/processes/{pid}/output", "/process/{pid}/output", "", bodyNone, opTimeout, scrubsProcessOutput, nil},
		{"GET", "/processes/{pid}/stream", "/process/{pid}/stream", "", bodyNone, 0, queryKey | scrubsProcessStream, nil},
		{"POST", "/processes/{pid}/input", "/process/{pid}/input", "send_process_input", bodyJSON, opTimeout, 0, processInputDetail},
		{"POST", "/processes/{pid}/stop", "/process/{pid}/stop", "stop_process", bodyNone, opTimeout, 0, stopProcessDetail},

		{"POST", "/interpreter/exec", "/interpreter/exec", "interpreter_exec", bodyJSON, interpreterTimeout, checkCode | writes | scrubsInterpreter, interpreterDetail},
		{"POST", "/interpreter/reset", "/interpreter/reset", "interpreter_reset", bodyNone, opTimeout, 0, nil},
		{"GET", "/interpreter/status", "/interpreter/status", "", bodyNone, opTimeout, 0, nil},
		// The opt-in tools' routes (issue 23): node_interpreter, pty_exec, the browser.
		{"POST", "/node-interpreter/exec", "/node-interpreter/exec", "node_interpreter_exec", bodyJSON, interpreterTimeout, checkNodeCode | writes | scrubsInterpreter, interpreterDetail},
		{"POST", "/node-interpreter/reset", "/node-interpreter/reset", "node_interpreter_reset", bodyNone, opTimeout, 0, nil},
		{"GET", "/node-interpreter/status", "/node-interpreter/status", "", bodyNone, opTimeout, 0, nil},
		{"POST", "/pty-exec", "/pty-exec", "pty_exec", bodyJSON, ptyTimeout, checkCommand | writes, ptyExecDetail},
		{"POST", "/browser/navigate", "/browser/navigate", "browser_navigate", bodyJSON, browserTimeout, 0, browserNavigateDetail},
		{"POST", "/browser/exec", "/browser/exec", "browser_exec", bodyJSON, browserTimeout, 0, browserExecDetail},
		{"POST", "/browser/screenshot", "/browser/screenshot", "browser_screenshot", bodyJSON, browserTimeout, 0, nil},
		{"POST", "/browser/close", "/browser/close", "browser_close", bodyNone, opTimeout, 0, nil},

		{"POST", "/lsp/start", "/lsp/start", "lsp_start", bodyJSON, opTimeout, 0, lspStartDetail},
		{"POST", "/lsp/{lsp_id}/open", "/lsp/{lsp_id}/open", "lsp_open", bodyJSON, opTimeout, 0, lspOpenDetail},
		{"POST", "/lsp/{lsp_id}/completion", "/lsp/{lsp_id}/completion", "lsp_completion", bodyJSON, opTimeout, 0, lspCompletionDetail},
		{"POST", "/lsp/{lsp_id}/stop", "/lsp/{lsp_id}/stop", "lsp_stop", bodyNone, opTimeout, 0, lspIDDetail},
	}
}

// docs documents proxyRoutes by "METHOD /path".
var docs = map[string]httpx.RouteDoc{
	"POST /files":                   {Summary: "Write a text file, on disk before the answer; 403 permission_denied when the sandbox user (uid 1001) may not write it, 507 insufficient_storage when the disk is full (docs/files.md)", Request: api.FileCreateRequest{}, Response: api.FileCreateResult{}},
	"POST /files/view":              {Summary: "Read a file with line numbers, or list a directory; 403 permission_denied when the sandbox user may not read it", Request: api.ViewRequest{}, Response: api.ViewResult{}},
	"POST /files/str-replace":       {Summary: "Replace a unique string in a file; 403 permission_denied when the sandbox user may not write it, 507 insufficient_storage when the disk is full", Request: api.StrReplaceRequest{}, Response: api.StrReplaceResult{}},
	"POST /files/ls":                {Summary: "List a directory; 404 not_found when it does not exist, 400 not_a_directory when it is a file (docs/files.md)", Request: api.LsRequest{}, Response: api.LsResult{}},
	"POST /files/glob":              {Summary: "Find files by glob pattern", Request: api.GlobRequest{}, Response: api.GlobResult{}},
	"POST /files/grep":              {Summary: "Search file contents", Request: api.GrepRequest{}, Response: api.GrepResult{}},
	"POST /files/watch":             {Summary: "Wait for file changes under a path", Request: api.WatchRequest{}, Response: api.WatchResult{}},
	"POST /files/present":           {Summary: "Mark files as outputs for the user", Request: api.PresentFilesRequest{}, Response: api.PresentFilesResult{}},
	"PUT /files/raw":                {Summary: "Upload a file's bytes (streamed), on disk before the answer; 403 permission_denied when the sandbox user may not write it, 507 insufficient_storage when the disk is full", Response: api.FileWriteResult{}},
	"GET /files/raw":                {Summary: "Download a file's bytes (streamed)", Produces: "application/octet-stream"},
	"POST /files/archive":           {Summary: "Extract a tar(.gz) stream under a path, on disk before the answer; 403 permission_denied when the sandbox user may not write there, 507 insufficient_storage when the disk is full", Response: api.ArchiveResult{}},
	"GET /files/archive":            {Summary: "Download a directory as a tar; gzip=1 compresses it, one_file_system=true leaves out other mounts (volumes)", Produces: "application/x-tar, application/gzip", Query: []string{"gzip", "one_file_system"}},
	"POST /exec/{exec_id}/signal":   {Summary: "Send a running streamed exec (named by its answer's X-Exec-Id header) SIGINT, SIGTERM, SIGHUP or SIGKILL, to its process group, as a terminal's Ctrl-C; the exec's stream then ends with its exit code; 404 not_found once it ended", Request: api.ExecSignalRequest{}, Response: api.ExecSignalResult{}},
	"POST /processes":               {Summary: "Start a background process", Request: api.ProcessStartRequest{}, Response: api.ProcessStarted{}, Status: http.StatusCreated},
	"GET /processes":                {Summary: "List background processes", Response: api.ProcessList{}},
	"POST /processes/kill-all":      {Summary: "Stop every background process", Response: api.KillAllResult{}},
	"GET /processes/{pid}/output":   {Summary: "A process's output since an offset", Response: api.ProcessOutput{}, Query: []string{"since_offset"}},
	"GET /processes/{pid}/stream":   {Summary: "Server-sent events of a process's output, then its exit (or an error event that ends the stream)", Response: api.ProcessEvent{}, Produces: "text/event-stream", Query: []string{"since_offset"}},
	"POST /processes/{pid}/input":   {Summary: "Write to a process's stdin", Request: api.ProcessInputRequest{}, Response: api.ProcessInputResult{}},
	"POST /processes/{pid}/stop":    {Summary: "Stop a process", Response: api.ProcessStopResult{}},
	"POST /interpreter/exec":        {Summary: "Run Python code in the sandbox's persistent interpreter", Request: api.InterpreterExecRequest{}, Response: api.InterpreterExecResult{}},
	"POST /interpreter/reset":       {Summary: "Restart the interpreter", Response: api.InterpreterReset{}},
	"GET /interpreter/status":       {Summary: "The interpreter's state", Response: api.InterpreterStatus{}},
	"POST /node-interpreter/exec":   {Summary: "Run JavaScript in the sandbox's persistent Node.js interpreter (node_interpreter); result is util.inspect of the last value, a promise awaited", Request: api.InterpreterExecRequest{}, Response: api.InterpreterExecResult{}},
	"POST /node-interpreter/reset":  {Summary: "Restart the Node.js interpreter", Response: api.InterpreterReset{}},
	"GET /node-interpreter/status":  {Summary: "The Node.js interpreter's state", Response: api.InterpreterStatus{}},
	"POST /browser/navigate":        {Summary: "Open a URL in the sandbox's headless Chromium (browser_navigate); page failures come back in error", Request: api.BrowserNavigateRequest{}, Response: api.BrowserNavigateResult{}},
	"POST /browser/exec":            {Summary: "Run JavaScript in the page (browser_exec): its value as JSON, a promise awaited", Request: api.BrowserExecRequest{}, Response: api.BrowserExecResult{}},
	"POST /browser/screenshot":      {Summary: "A PNG of the page, base64 (browser_screenshot; at most 5 MiB)", Request: api.BrowserScreenshotRequest{}, Response: api.BrowserScreenshotResult{}},
	"POST /browser/close":           {Summary: "Stop the sandbox's Chromium", Response: api.BrowserCloseResult{}},
	"POST /pty-exec":                {Summary: "Run one command (split into words, no shell) on a terminal of its own, typing input_bytes (base64) into it (pty_exec); the allowlist applies", Request: api.PTYExecRequest{}, Response: api.PTYExecResult{}},
	"POST /lsp/start":               {Summary: "Start a language server", Request: api.LSPStartRequest{}, Response: api.LSPStarted{}},
	"POST /lsp/{lsp_id}/open":       {Summary: "Open a document in a language server", Request: api.LSPOpenRequest{}, Response: api.LSPStatus{}},
	"POST /lsp/{lsp_id}/completion": {Summary: "Ask a language server for completions", Request: api.LSPCompletionRequest{}, Response: api.LSPCompletionResult{}},
	"POST /lsp/{lsp_id}/stop":       {Summary: "Stop a language server", Response: api.LSPStatus{}},
}
