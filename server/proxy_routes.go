package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/hold"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/sidecar"
)

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
	// upload: writes data the caller sends, refused (507) while the host
	// is below its free-space watermark.
	upload
	// The answer carries command output, scrubbed of secrets (scrub.go):
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
		{"POST", "/files", "/file-create", "file_create", bodyJSON, opTimeout, upload | writes, fileCreateDetail},
		{"POST", "/files/view", "/view", "view", bodyJSON, opTimeout, 0, viewDetail},
		{"POST", "/files/str-replace", "/str-replace", "str_replace", bodyJSON, opTimeout, writes, strReplaceDetail},
		{"POST", "/files/ls", "/ls", "ls", bodyJSON, opTimeout, 0, lsDetail},
		{"POST", "/files/glob", "/glob", "glob", bodyJSON, opTimeout, 0, globDetail},
		{"POST", "/files/grep", "/grep", "grep", bodyJSON, opTimeout, 0, grepDetail},
		{"POST", "/files/watch", "/watch", "watch", bodyJSON, watchTimeout, 0, watchDetail},
		{"POST", "/files/present", "/present-files", "present_files", bodyJSON, opTimeout, 0, presentDetail},
		{"PUT", "/files/raw", "/files/raw", "file_upload", bodyStream, 0, needPath | upload | writes, transferDetail},
		{"GET", "/files/raw", "/files/raw", "file_download", bodyNone, 0, needPath, transferDetail},
		{"POST", "/files/archive", "/files/archive", "archive_upload", bodyStream, 0, needPath | upload | writes, transferDetail},
		{"GET", "/files/archive", "/files/archive", "archive_download", bodyNone, 0, needPath, transferDetail},

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
		// The opt-in tools' routes (issue 23): node_interpreter and pty_exec.
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

// registerProxyRoutes registers proxyRoutes on the server's mux.
func (s *Server) registerProxyRoutes() {
	for _, rt := range proxyRoutes() {
		pattern := rt.method + " /v1/sandboxes/{id}" + rt.path
		if rt.flags&queryKey != 0 {
			s.handleQueryKey(pattern, s.proxyHandler(rt))
		} else {
			s.handle(pattern, s.proxyHandler(rt))
		}
	}
}

// idPattern is what a process or LSP id in a path may look like. Checking
// it keeps "..", "/" and query characters out of the sidecar path built
// from it.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// wildcardPattern finds {name} in a sidecar path template.
var wildcardPattern = regexp.MustCompile(`\{([a-z_]+)\}`)

// exchange is what an audit detail function may look at: the request and
// its JSON body, and the sidecar's answer.
type exchange struct {
	r        *http.Request
	reqBody  []byte // bodyJSON routes
	upBytes  int64  // bodyStream routes: bytes uploaded
	call     *sidecar.Call
	exitCode *int // set by detail functions that know one
	// outputTruncated is set by detail functions whose answer says output was cut.
	outputTruncated bool
}

// req decodes the request body into v; fields it cannot decode stay zero
// (the sidecar accepted the request, so this does not happen in practice).
func (x *exchange) req(v any) { _ = json.Unmarshal(x.reqBody, v) }

// resp decodes the captured JSON answer into v and reports whether it could.
func (x *exchange) resp(v any) bool {
	return x.call.Captured != nil && json.Unmarshal(x.call.Captured, v) == nil
}

// proxyHandler serves one proxyRoute.
func (s *Server) proxyHandler(rt proxyRoute) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		sb, err := s.loadSandbox(r)
		if err != nil {
			return err
		}
		if !sb.Active() {
			return notActive(sb)
		}
		path, err := expandSidecarPath(rt.sidecar, r)
		if err != nil {
			return err
		}
		query := r.URL.Query()
		query.Del("api_key")
		if rt.flags&needPath != 0 && query.Get("path") == "" {
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "query parameter path is required").
				WithHint("name the file or directory in the sandbox, e.g. ?path=/workspace/data.csv")
		}
		x := &exchange{r: r}
		c := &sidecar.Call{Method: rt.method, Path: path, Query: query, Length: -1, Timeout: rt.timeout}
		var up *sidecar.CountingReader
		switch rt.body {
		case bodyJSON:
			if x.reqBody, err = readBody(w, r, httpx.MaxExecBody); err != nil {
				return err
			}
			if rt.flags&(checkCommand|checkCode|checkNodeCode) != 0 {
				program := "python3"
				if rt.flags&checkNodeCode != 0 {
					program = "node"
				}
				if err := s.checkBodyCommand(r, x.reqBody, rt.flags&(checkCode|checkNodeCode) != 0, program); err != nil {
					return err
				}
			}
			c.Body, c.Length = bytes.NewReader(x.reqBody), int64(len(x.reqBody))
		case bodyStream:
			apihttp.Streaming(r) // an upload of any size: only stalls time out
			up = &sidecar.CountingReader{R: r.Body}
			c.Body, c.Length = up, r.ContentLength
		}
		started := s.now()
		// Command output is scrubbed on its way out (scrub.go); finish
		// sends what the scrubber still holds.
		out, finish := s.routeScrubber(rt, r, w)
		if rt.op == "" {
			err = s.forward(out, r, sb, c)
			finish()
			if errors.Is(err, sidecar.ErrStreamBroken) {
				s.abortResponse(r, err)
			}
			return err
		}
		if err := s.auditOpen(); err != nil {
			return err
		}
		if rt.flags&upload != 0 {
			if err := s.admitWrite(r.Context(), sb.ID); err != nil {
				return err
			}
		}
		// Audited: the end of the answer waits for the entry (exec_hold.go).
		hw := hold.NewTail(out)
		err = s.forward(hw, r, sb, c)
		if errors.Is(err, sidecar.ErrStreamBroken) {
			s.abortResponse(r, err)
		}
		if err == nil && c.Status >= 500 && rt.flags&writes != 0 {
			// The sidecar could not write: if that is because the host
			// could not store it, say so rather than pass on a 500.
			if serr := s.brokenDisk(r.Context(), sb, rt.op); serr != nil {
				return hw.Fail(serr)
			}
		}
		if err != nil || c.Status/100 != 2 {
			hw.Release()
			finish()
			return err
		}
		x.call = c
		if up != nil {
			x.upBytes = up.N
		}
		var syncErr error
		if rt.flags&writes != 0 {
			syncErr = s.syncDisk(r.Context(), sb, strings.ReplaceAll(rt.op, "_", " "))
		}
		var detail map[string]any
		if rt.detail != nil {
			detail = rt.detail(x)
		}
		if syncErr != nil {
			if detail == nil {
				detail = map[string]any{}
			}
			detail["stored"] = false // performed, but the host could not store it
		}
		err = s.audit(r.Context(), audit.Record{
			Sandbox: sb, Operation: rt.op, Detail: detail,
			ExitCode: x.exitCode, OutputTruncated: x.outputTruncated,
			Started: started, Duration: s.now().Sub(started),
		})
		if err == nil {
			err = syncErr
		}
		if err != nil {
			return hw.Fail(audit.WithOutcome(err, map[string]any{"status": c.Status}))
		}
		hw.Release()
		finish()
		return nil
	}
}

// expandSidecarPath fills the {name} wildcards of a sidecar path template
// with the request's path values, which must look like ids.
func expandSidecarPath(tmpl string, r *http.Request) (string, error) {
	var bad error
	out := wildcardPattern.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[1 : len(m)-1]
		v := r.PathValue(name)
		if !idPattern.MatchString(v) && bad == nil {
			what := strings.TrimSuffix(strings.ReplaceAll(name, "_", " "), " id")
			if name == "pid" {
				what = "process"
			}
			bad = api.Errorf(http.StatusNotFound, api.CodeNotFound, "%s %q not found", what, v)
		}
		return v
	})
	return out, bad
}

// readBody reads a JSON request body of at most limit bytes, checked
// but passed on unchanged (apihttp.ReadJSON).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return apihttp.ReadJSON(w, r, limit)
}

// Audit details, one per operation, in the reference's shapes. They name
// what was done, never the data: no file contents, no process input, no
// LSP document text.

// detail is the audit detail of a proxied operation: of names the request
// body's fields (decoded into Q) and, when the sidecar's JSON answer
// decodes into R, and adds the answer's. and may be nil.
func detail[Q, R any](x *exchange, of func(Q) map[string]any, and func(R, map[string]any)) map[string]any {
	var q Q
	x.req(&q)
	d := of(q)
	var r R
	if and != nil && x.resp(&r) {
		and(r, d)
	}
	return d
}

// pathReq is a request body of which the detail keeps the path only.
type pathReq struct {
	Path string `json:"path"`
}

type (
	viewReq struct {
		Path      string `json:"path"`
		ViewRange []int  `json:"view_range"`
	}
	strReplaceReq struct {
		Path       string `json:"path"`
		ReplaceAll bool   `json:"replace_all"`
	}
)

func fileCreateDetail(x *exchange) map[string]any {
	return detail(x, func(q pathReq) map[string]any { return map[string]any{"path": q.Path} },
		func(r api.FileCreateResult, d map[string]any) { d["size"] = r.Size })
}

func viewDetail(x *exchange) map[string]any {
	return detail[viewReq, struct{}](x, func(q viewReq) map[string]any {
		return map[string]any{"path": q.Path, "view_range": q.ViewRange}
	}, nil)
}

func strReplaceDetail(x *exchange) map[string]any {
	return detail(x, func(q strReplaceReq) map[string]any {
		return map[string]any{"path": q.Path, "replace_all": q.ReplaceAll}
	},
		func(r api.StrReplaceResult, d map[string]any) { d["occurrences"] = r.Occurrences })
}

func lsDetail(x *exchange) map[string]any {
	return detail(x, func(q api.LsRequest) map[string]any { return map[string]any{"path": q.Path} },
		func(r api.LsResult, d map[string]any) { d["entry_count"] = len(r.Entries) })
}

func globDetail(x *exchange) map[string]any {
	return detail(x, func(q api.GlobRequest) map[string]any { return map[string]any{"pattern": q.Pattern, "path": q.Path} },
		func(r api.GlobResult, d map[string]any) { d["match_count"] = len(r.Matches) })
}

func grepDetail(x *exchange) map[string]any {
	return detail(x, func(q api.GrepRequest) map[string]any {
		return map[string]any{"pattern": q.Pattern, "path": q.Path, "glob": q.Glob}
	}, func(r api.GrepResult, d map[string]any) {
		d["match_count"], d["truncated"] = len(r.Matches), r.Truncated
	})
}

func watchDetail(x *exchange) map[string]any {
	return detail(x, func(q api.WatchRequest) map[string]any {
		return map[string]any{"path": q.Path, "recursive": q.Recursive}
	},
		func(r api.WatchResult, d map[string]any) { d["change_count"] = len(r.Changes) })
}

func presentDetail(x *exchange) map[string]any {
	return detail(x, func(q api.PresentFilesRequest) map[string]any { return map[string]any{"filepaths": q.Filepaths} },
		func(r api.PresentFilesResult, d map[string]any) { d["file_count"] = len(r.Files) })
}

// transferDetail is the detail of raw and archive transfers: the path and
// the bytes that crossed the control plane (the body sent for uploads, the
// body received for downloads).
func transferDetail(x *exchange) map[string]any {
	n := x.call.BytesOut
	if x.r.Method != http.MethodGet {
		n = x.upBytes
	}
	return map[string]any{"path": x.r.URL.Query().Get("path"), "bytes": n}
}

func startProcessDetail(x *exchange) map[string]any {
	return detail(x, func(q api.ProcessStartRequest) map[string]any {
		command := audit.LoggedText(q.Command)
		if q.MaxRuntimeSeconds == 0 { // absent: the sidecar took the default (an explicit 0 is refused)
			q.MaxRuntimeSeconds = api.DefaultProcessRuntime
		}
		d := map[string]any{"command": command, "max_runtime_seconds": q.MaxRuntimeSeconds}
		if len(command) < len(q.Command) {
			d["command_bytes"] = len(q.Command)
		}
		return d
	}, func(r api.ProcessStarted, d map[string]any) { d["process_id"] = r.ProcessID })
}

func killAllDetail(x *exchange) map[string]any {
	var res api.KillAllResult
	if !x.resp(&res) {
		return nil
	}
	return map[string]any{"killed": res.Killed}
}

func processInputDetail(x *exchange) map[string]any {
	return detail(x, func(struct{}) map[string]any { return map[string]any{"process_id": x.r.PathValue("pid")} },
		func(r api.ProcessInputResult, d map[string]any) { d["bytes_written"] = r.BytesWritten })
}

func stopProcessDetail(x *exchange) map[string]any {
	return detail(x, func(struct{}) map[string]any {
		return map[string]any{"process_id": x.r.PathValue("pid"), "exit_code": nil}
	}, func(r api.ProcessStopResult, d map[string]any) {
		d["exit_code"], d["status"] = r.ExitCode, r.Status
		x.exitCode = r.ExitCode
	})
}

// interpreterDetail logs the code like exec logs a command (cut at
// maxLoggedText): it is what the agent ran, and the audit log exists to
// show that. Its output is not logged.
func interpreterDetail(x *exchange) map[string]any {
	return detail(x, func(q api.InterpreterExecRequest) map[string]any {
		return map[string]any{"code": audit.LoggedText(q.Code), "code_bytes": len(q.Code), "timeout": q.Timeout}
	}, func(r api.InterpreterExecResult, d map[string]any) {
		d["error"] = r.Error != nil
		x.outputTruncated = r.Truncated
	})
}

// ptyExecDetail logs the command as exec does, and how it ended; what
// was typed (input_bytes) is counted, not logged: it may be a password.
func ptyExecDetail(x *exchange) map[string]any {
	var req api.PTYExecRequest
	x.req(&req)
	command := audit.LoggedText(req.Command)
	typed := base64.StdEncoding.DecodedLen(len(req.InputBytes))
	if b, err := base64.StdEncoding.DecodeString(req.InputBytes); err == nil {
		typed = len(b)
	}
	d := map[string]any{"command": command, "input_bytes": typed}
	if len(command) < len(req.Command) {
		d["command_bytes"] = len(req.Command)
	}
	var res api.PTYExecResult
	if x.resp(&res) {
		d["timed_out"] = res.TimedOut
		x.exitCode = res.ExitCode
	}
	return d
}

func browserNavigateDetail(x *exchange) map[string]any {
	var req api.BrowserNavigateRequest
	x.req(&req)
	d := map[string]any{"url": audit.LoggedText(req.URL)}
	var res api.BrowserNavigateResult
	if x.resp(&res) {
		d["status"] = res.Status
		d["error"] = res.Error != nil
	}
	return d
}

// browserExecDetail logs the script as exec logs a command.
func browserExecDetail(x *exchange) map[string]any {
	var req api.BrowserExecRequest
	x.req(&req)
	d := map[string]any{"script": audit.LoggedText(req.Script), "script_bytes": len(req.Script)}
	var res api.BrowserExecResult
	if x.resp(&res) {
		d["error"] = res.Error != nil
	}
	return d
}

func lspStartDetail(x *exchange) map[string]any {
	return detail(x, func(q api.LSPStartRequest) map[string]any { return map[string]any{"language": q.Language} },
		func(r api.LSPStarted, d map[string]any) { d["lsp_id"] = r.LSPID })
}

// lspOpenDetail logs the document's path and size, never its text.
func lspOpenDetail(x *exchange) map[string]any {
	return detail[api.LSPOpenRequest, struct{}](x, func(q api.LSPOpenRequest) map[string]any {
		return map[string]any{"lsp_id": x.r.PathValue("lsp_id"), "path": q.Path, "content_bytes": len(q.Content)}
	}, nil)
}

func lspCompletionDetail(x *exchange) map[string]any {
	return detail(x, func(q api.LSPCompletionRequest) map[string]any {
		return map[string]any{"lsp_id": x.r.PathValue("lsp_id"), "path": q.Path, "line": q.Line, "character": q.Character}
	}, func(r api.LSPCompletionResult, d map[string]any) { d["item_count"] = len(r.Items) })
}

func lspIDDetail(x *exchange) map[string]any {
	return map[string]any{"lsp_id": x.r.PathValue("lsp_id")}
}
