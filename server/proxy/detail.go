package proxy

import (
	"encoding/base64"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
)

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

func execSignalDetail(x *exchange) map[string]any {
	return detail[api.ExecSignalRequest, struct{}](x, func(q api.ExecSignalRequest) map[string]any {
		return map[string]any{"exec_id": x.r.PathValue("exec_id"), "signal": q.Signal}
	}, nil)
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
