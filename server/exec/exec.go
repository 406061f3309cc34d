package exec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/hold"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// execBody decodes an exec request. Its Timeout shadows the embedded
// api.ExecRequest.Timeout (encoding/json prefers the shallower field), so
// an explicit "timeout": 0, which is refused, is told apart from an absent
// one, which means the default.
type execBody struct {
	api.ExecRequest
	Timeout *int `json:"timeout"`
}

// Grace is how much longer than the command's own timeout the server
// waits for the sidecar, which kills the command at the timeout and still
// has to answer.
const Grace = 30 * time.Second

// exec serves POST /v1/sandboxes/{id}/exec by proxying to the
// sidecar's /exec. With Accept: application/x-ndjson the sidecar streams
// events and they are passed on as they arrive.
func (s *Service) exec(w http.ResponseWriter, r *http.Request) error {
	req, err := s.decodeExec(w, r)
	if err != nil {
		return err
	}
	sb, err := s.d.LoadActive(r)
	if err != nil {
		return err
	}
	if err := s.d.CheckCommand(r, envAssignments(req.Env, req.SecretEnv)+req.Command); err != nil {
		return err
	}
	wrapResult, err := s.d.SecretEnv(r, sb, &req)
	if err != nil {
		return err
	}
	if err := s.d.Audit.Open(); err != nil {
		return err
	}
	streamed := strings.Contains(r.Header.Get("Accept"), api.ContentTypeNDJSON)
	// A JSON answer is held in memory until audited: its bound is
	// reserved before the command runs, and given back however the
	// handler ends (answered, client gone, panic).
	release, err := s.reserveHeld(sb, req, streamed)
	if err != nil {
		return err
	}
	defer release()
	fwd := req
	fwd.SecretEnv = nil // resolved into Env
	payload, err := json.Marshal(fwd)
	if err != nil {
		return fmt.Errorf("encode exec request: %w", err)
	}
	var out execOutcome
	var sent atomic.Bool // the JSON exec's request reached the sidecar
	c := &sidecar.Call{
		Method: http.MethodPost, Path: "/exec",
		Body: bytes.NewReader(payload), Length: int64(len(payload)),
		Timeout: time.Duration(req.Timeout)*time.Second + Grace,
	}
	// The end of the answer waits for the audit entry (exec_hold.go); its
	// output is scrubbed of secrets on the way (scrub.go).
	sc := s.d.NewScrub(r)
	defer sc.Stop()
	var hw hold.Writer
	var fw http.ResponseWriter // what the sidecar's answer is written to
	finishSecrets := func() {}
	if streamed {
		c.Tap = sidecar.LineTap(maxEventLine, out.event)
		hw = hold.NewExit(sc.Events(w))
		fw = hw
		c.HandOver = s.execHandedOver(r, sb, req, &out)
	} else {
		hw = hold.NewResponse(w)
		fw = sc.Result(hw)
		if wrapResult != nil {
			fw, finishSecrets = wrapResult(fw)
		}
		c.Survive = true // a revoked credential loses the result, not the command
		// The sidecar answers a JSON exec once the command has ended: its
		// disk flush starts then, while the answer is read and scrubbed.
		c.Answered = func() { out.flushed = s.startFlush(r, sb) }
	}
	c.Written = func() { sent.Store(true) }
	started := s.d.Now()
	err = s.d.Forward(fw, r, sb, c)
	if errors.Is(err, sidecar.ErrHandedOver) {
		// The credential was revoked: the stream ends, the command runs on.
		return hw.Fail(authz.StreamEnded(r.Context()))
	}
	finishSecrets()
	sc.Done()
	out.outputRedacted = sc.OutputRedacted()
	if clientGone(r, sent.Load()) {
		return s.auditUnanswered(r, c, sb, req, &out, started, clientGoneError(), err)
	}
	if eh, ok := hw.(*hold.Exit); ok {
		switch {
		case out.exitCode != nil && errors.Is(err, sidecar.ErrCut):
			err = nil // the exit event came whole; only the stream's end was lost
		case streamCut(r, c, &out, err):
			return s.endCutStream(r, eh, c, sb, req, &out, started, err)
		}
	}
	if jsonCut(r, c, sent.Load(), err) {
		err = s.auditUnanswered(r, c, sb, req, &out, started, s.cutError(r, sb, err), err)
	}
	if errors.Is(err, sidecar.ErrStreamBroken) {
		s.d.AbortResponse(r, err)
	}
	if err != nil || c.Status/100 != 2 {
		hw.Release()
		return err
	}
	s.d.ObserveExec(s.d.Now().Sub(started))
	captured := c.Captured
	if hr, ok := hw.(*hold.Response); ok && captured == nil {
		// Larger than the proxy's capture: the held answer is whole.
		captured = hr.Body()
	}
	out.result(captured)
	s.memoryStop(r.Context(), hw, sb, &out)
	return s.acknowledge(r, hw, sc, c, sb, req, &out, started)
}

// memoryStop marks an exec the sandbox's memory limit killed: one that
// ended with the exit code of a SIGKILL, no other reason given, while the
// kernel's OOM killer killed a process of the sandbox (Deps.MemoryKilled,
// which a kill -9 leaves alone). The held answer (the JSON result, or the
// stream's exit event) gets stop_reason memory_limit. Off the hot path:
// only such an exit is checked.
func (s *Service) memoryStop(ctx context.Context, hw hold.Writer, sb *model.Sandbox, out *execOutcome) {
	if out.exitCode == nil || *out.exitCode != api.ExitCodeKilled || out.output.StopReason != "" {
		return
	}
	if !s.d.MemoryKilled(ctx, sb) {
		return
	}
	out.output.StopReason = api.StopReasonMemoryLimit
	if sr, ok := hw.(interface{ SetStopReason(string) }); ok {
		sr.SetStopReason(api.StopReasonMemoryLimit)
	}
}

// decodeExec reads and checks an exec request, its timeout defaulted.
func (s *Service) decodeExec(w http.ResponseWriter, r *http.Request) (api.ExecRequest, error) {
	var body execBody
	if err := httpx.DecodeJSON(w, r, &body, httpx.MaxExecBody); err != nil {
		return api.ExecRequest{}, err
	}
	req := body.ExecRequest
	if strings.TrimSpace(req.Command) == "" {
		return api.ExecRequest{}, httpx.Invalid("command", "command must not be empty", "")
	}
	req.Timeout = api.DefaultExecTimeout
	if body.Timeout != nil {
		req.Timeout = *body.Timeout
		if req.Timeout < 1 || req.Timeout > api.MaxExecTimeout {
			return api.ExecRequest{}, httpx.Invalid("timeout", fmt.Sprintf("timeout must be between 1 and %d seconds, got %d", api.MaxExecTimeout, req.Timeout),
				fmt.Sprintf("omit timeout for the default of %d seconds", api.DefaultExecTimeout))
		}
	}
	if err := s.checkOutputLimit(&req); err != nil {
		return api.ExecRequest{}, err
	}
	return req, nil
}

// acknowledge stores and audits a finished command, then releases the held
// answer, or fails it: with the command's outcome attached when storing or
// auditing failed, or as revoked when the credential was.
func (s *Service) acknowledge(r *http.Request, hw hold.Writer, sc *scrub.Exec, c *sidecar.Call, sb *model.Sandbox, req api.ExecRequest, out *execOutcome, started time.Time) error {
	// What the command wrote is on the host's storage before it is
	// acknowledged, or the answer says it is not.
	// A revoked credential loses the result, not the command: that is
	// synced and audited all the same.
	revoked := errors.Is(context.Cause(r.Context()), authz.ErrCredentialRevoked)
	syncCtx := r.Context()
	if revoked {
		syncCtx = context.WithoutCancel(syncCtx)
	}
	err := s.storeAndAudit(r, syncCtx, sb, req, out, started)
	if revoked {
		return hw.Fail(authz.StreamEnded(r.Context()))
	}
	if err != nil {
		// The command ran; the answer says so instead of passing for a
		// recorded, stored result.
		outcome := map[string]any{"exit_code": out.exitCode}
		if c.Captured != nil {
			outcome["result"] = json.RawMessage(sc.CapturedResult(c.Captured))
		}
		err = audit.WithOutcome(err, outcome)
		if ae, ok := errors.AsType[*api.Error](err); ok && httpx.InfoFrom(r.Context()) != nil {
			ae.RequestID = httpx.RequestID(r.Context()) // a stream's error event has no envelope to carry it
		}
		return hw.Fail(err)
	}
	hw.Release()
	return nil
}

// storeAndAudit flushes what the command wrote to the host's storage and
// commits the exec's audit entry, side by side (audit.AppendStored): the
// answer waits for both. A JSON exec's flush started when the sidecar's
// answer began (out.flushed); the entry is built and committed meanwhile.
func (s *Service) storeAndAudit(r *http.Request, syncCtx context.Context, sb *model.Sandbox, req api.ExecRequest, out *execOutcome,
	started time.Time,
) error {
	id := model.NewID()
	flush := audit.Flush{Started: out.flushed, Run: func() error { return s.d.SyncDisk(syncCtx, sb, "exec") }}
	return s.d.Audit.AppendStored(r.Context(), sb, "exec", id, func() error {
		return s.auditExec(r, sb, req, out, started, nil, id)
	}, flush)
}

// startFlush starts flushing sb's disk for an exec whose command has
// ended and returns where its result will be. It runs to its end even if
// nobody waits for it (the exec failed otherwise), whatever the request's
// context does: a revoked credential loses the result, not the flush.
func (s *Service) startFlush(r *http.Request, sb *model.Sandbox) <-chan error {
	flushed := make(chan error, 1)
	ctx := context.WithoutCancel(r.Context())
	go func() { flushed <- s.d.SyncDisk(ctx, sb, "exec") }()
	runtime.Gosched() // the flush's goroutine first: it only waits in the kernel
	return flushed
}

// execHandedOver returns what runs when a streamed exec's credential was
// revoked and the rest of its stream was read in the background: the
// audit entry, as for any exec (cut, when the stream from the sidecar
// broke off instead of ending).
func (s *Service) execHandedOver(r *http.Request, sb *model.Sandbox, req api.ExecRequest, out *execOutcome) func(error) {
	started := s.d.Now()
	// The handler has returned by then: keep the request's values, not its end.
	r = r.WithContext(context.WithoutCancel(r.Context()))
	return func(err error) {
		var cut *api.Error
		if err != nil || out.exitCode == nil {
			cut = &api.Error{Code: api.CodeSandboxFailed, Message: "the stream from the sandbox broke off"}
		}
		if aerr := s.auditExec(r, sb, req, out, started, cut, ""); aerr != nil {
			s.d.Log.ErrorContext(r.Context(), "audit an exec whose credential was revoked", "sandbox", sb.ID, "err", aerr)
		}
	}
}

// auditExec writes an exec's audit entry: the command, its timeout, the
// exit code and, when output was cut, the counts; cut is the error a
// stream that broke off ended with, if it did; id is the entry's, when
// the caller names it in another (else a new one).
func (s *Service) auditExec(r *http.Request, sb *model.Sandbox, req api.ExecRequest, out *execOutcome, started time.Time, cut *api.Error, id string) error {
	command := audit.LoggedText(req.Command)
	detail := map[string]any{"command": command, "timeout": req.Timeout}
	if len(command) < len(req.Command) {
		detail["command_bytes"] = len(req.Command)
	}
	if o := out.output; o.Truncated {
		detail["stdout_bytes"], detail["stderr_bytes"] = o.StdoutBytes, o.StderrBytes
		detail["output_limit_bytes"] = o.OutputLimitBytes
		if o.StopReason != "" {
			detail["stop_reason"] = o.StopReason
		}
	}
	if out.output.StopReason == api.StopReasonMemoryLimit {
		detail["stop_reason"] = api.StopReasonMemoryLimit
	}
	if cut != nil {
		detail["error"] = cut.Code
	}
	if out.outputRedacted {
		detail["output_redacted"] = true
	}
	if len(req.SecretEnv) > 0 {
		detail["secret_env"] = req.SecretEnv // variable → secret name, never a value
	}
	source := ""
	if g := authz.From(r.Context()).Grant; g != nil {
		// `ssh id@host cmd` through the bastion: a person, not an agent.
		source = api.LogSourceHumanTakeover
		maps.Copy(detail, g.Detail())
	}
	return s.d.Audit.Append(r.Context(), audit.Record{
		ID: id, Sandbox: sb, Source: source, Operation: "exec", Detail: detail,
		ExitCode: out.exitCode, OutputTruncated: out.output.Truncated,
		Started: started, Duration: s.d.Now().Sub(started),
	})
}

// streamCut reports whether an NDJSON exec's stream from the sidecar broke
// off, or ended without its exit event, while the client was still there.
func streamCut(r *http.Request, c *sidecar.Call, out *execOutcome, err error) bool {
	if r.Context().Err() != nil || c.Status/100 != 2 {
		return false
	}
	return errors.Is(err, sidecar.ErrCut) || err == nil && out.exitCode == nil
}

// clientGone reports whether the client went away (not a revoked
// credential's end, which the hand-over and acknowledge paths audit) after
// the exec's request reached the sidecar.
func clientGone(r *http.Request, sent bool) bool {
	return sent && r.Context().Err() != nil && !errors.Is(context.Cause(r.Context()), authz.ErrCredentialRevoked)
}

// ErrorClientGone is the detail's error of the entry of an exec whose
// client went away before its answer.
const ErrorClientGone = "client_gone"

// clientGoneError is the detail's error of the entry of an exec whose
// client went away after its request reached the sidecar: the command
// ran, partly or whole, so the log shows it (a client that hangs up must
// not run commands the log never sees).
func clientGoneError() *api.Error {
	return &api.Error{Code: ErrorClientGone, Message: "the client went away before the answer"}
}

// jsonCut reports whether a JSON exec whose request reached the sidecar
// was cut short from the sandbox's side (an answer of the server's, such as
// a freeze's or a destroy's, or the sidecar's answer broken off) while the
// client was still there.
func jsonCut(r *http.Request, c *sidecar.Call, sent bool, err error) bool {
	if !sent || c.HandOver != nil || err == nil || r.Context().Err() != nil || c.Status != 0 && c.Status/100 != 2 {
		return false
	}
	_, answered := errors.AsType[*api.Error](err)
	return answered || errors.Is(err, sidecar.ErrCut)
}

// endCutStream ends an exec stream the sidecar broke off with an error
// event, so the client learns why the output stops instead of seeing a
// cut connection (issue 19 finding 7), the answer of cutAnswer. The exec
// is audited without an exit code.
func (s *Service) endCutStream(r *http.Request, eh *hold.Exit, c *sidecar.Call, sb *model.Sandbox, req api.ExecRequest,
	out *execOutcome, started time.Time, cause error,
) error {
	s.d.Log.WarnContext(r.Context(), "exec stream broke off", "sandbox", sb.ID, "err", cause)
	e := s.cutAnswer(r, sb, c.Ended)
	if err := s.auditExec(r, sb, req, out, started, e, ""); err != nil {
		return eh.Fail(err)
	}
	return eh.Fail(e)
}

// cutAnswer is the answer to an exec the sidecar's side cut short: the
// answer that ended it when the server did (ended, the call's
// sidecar.Call.Ended: the sandbox paused, froze, or is being destroyed),
// 410 sandbox_lost when the sidecar no longer answers, else 502
// sandbox_operation_failed.
func (s *Service) cutAnswer(r *http.Request, sb *model.Sandbox, ended error) *api.Error {
	ctx := r.Context()
	e := &api.Error{
		Status: http.StatusBadGateway, Code: api.CodeSandboxFailed,
		Message: "the connection to the sandbox broke during the exec; its output ends here",
		Hint:    "the command may have run on; check its effects before running it again",
	}
	// Ended on purpose (the sandbox paused, is being destroyed, or froze):
	// that is the answer, not the sidecar's health (a paused sandbox's
	// does not answer).
	endedBy, _ := ended.(*api.Error)
	if endedBy == nil {
		endedBy, _ = s.d.Calls.Ending(sb.ID).(*api.Error)
	}
	if endedBy == nil {
		endedBy, _ = s.d.FrozenAnswer(sb.ID).(*api.Error)
	}
	var healthy bool
	if endedBy == nil {
		hctx, cancel := context.WithTimeout(ctx, cutHealthTimeout)
		healthy = s.d.Healthy(hctx, sb)
		cancel()
	}
	switch {
	case endedBy != nil:
		copied := *endedBy // shared by every call it ended
		e = &copied
	case !healthy:
		e = &api.Error{
			Status: http.StatusGone, Code: api.CodeSandboxLost,
			Message: "the sandbox's sidecar stopped during the exec; its output ends here",
			Hint:    "the sandbox is lost; create a new one (`boxkite session create`)",
		}
	}
	e.RequestID = httpx.RequestID(ctx)
	return e
}

// cutError is the error the client of a JSON exec that the sidecar's
// side cut short gets: the answer err carries, else cutAnswer's.
func (s *Service) cutError(r *http.Request, sb *model.Sandbox, err error) *api.Error {
	if cut, ok := errors.AsType[*api.Error](err); ok {
		return cut
	}
	return s.cutAnswer(r, sb, nil)
}

// auditUnanswered writes the entry of an exec whose request reached the
// sidecar but whose answer did not reach the client: its client went away
// (why is clientGoneError) or the sidecar's side cut a JSON exec short (a
// freeze, a destroy, the sidecar's death, its answer broken off; why is
// cutError). The command ran, for all anyone knows, so the log shows it,
// with the exit code when it came and why's code as the detail's error.
// Nothing is acknowledged, so the disk is not flushed for it. It returns
// the answer: err (why when err is nil), or the audit log's error when the
// entry could not be committed.
func (s *Service) auditUnanswered(r *http.Request, c *sidecar.Call, sb *model.Sandbox, req api.ExecRequest, out *execOutcome,
	started time.Time, why *api.Error, err error,
) error {
	r = r.WithContext(context.WithoutCancel(r.Context())) // the client may be gone
	if out.exitCode == nil && err == nil && c.Status/100 == 2 {
		out.result(c.Captured) // the answer came whole, only the client left
	}
	level := slog.LevelWarn
	if why.Code == ErrorClientGone {
		level = slog.LevelInfo // the client's doing, not the server's
	}
	s.d.Log.Log(r.Context(), level, "exec unanswered", "sandbox", sb.ID, "error", why.Code, "err", err)
	if aerr := s.auditExec(r, sb, req, out, started, why, ""); aerr != nil {
		return aerr
	}
	return cmp.Or(err, error(why))
}

// cutHealthTimeout bounds the health check that tells a dead sidecar
// from a broken connection when an exec stream breaks off.
const cutHealthTimeout = 2 * time.Second

// checkOutputLimit fills in and checks the output cap of an exec: the
// default when it is left out, at most the server's maximum.
func (s *Service) checkOutputLimit(req *api.ExecRequest) error {
	if req.MaxOutputBytes == 0 {
		req.MaxOutputBytes = api.DefaultExecOutput
	}
	if req.MaxOutputBytes < 1 || req.MaxOutputBytes > s.d.MaxOutputBytes {
		return httpx.Invalid("max_output_bytes",
			fmt.Sprintf("max_output_bytes must be between 1 and %d (this server's maximum), got %d", s.d.MaxOutputBytes, req.MaxOutputBytes),
			fmt.Sprintf("ask for 1 byte to %g MiB a stream, this server's maximum (boxkite exec --max-output takes sizes like 512K or 8M), "+
				"or omit it for the default of %g MiB", float64(s.d.MaxOutputBytes)/(1<<20), float64(api.DefaultExecOutput)/(1<<20)))
	}
	switch req.OnOutputLimit {
	case "", api.OutputLimitTruncate, api.OutputLimitStop:
		return nil
	}
	return httpx.Invalid("on_output_limit",
		fmt.Sprintf("on_output_limit must be %q or %q, got %q", api.OutputLimitTruncate, api.OutputLimitStop, req.OnOutputLimit), "")
}

// maxEventLine bounds the NDJSON and SSE lines parsed for the audit; an
// exit event is far shorter, output lines longer than it are only counted
// as far as the line allows.
const maxEventLine = 4 << 20

// execOutcome is what the audit needs from an exec's answer, JSON or NDJSON.
type execOutcome struct {
	exitCode       *int
	output         api.ExecOutputInfo
	outputRedacted bool // the scrubber replaced something in the output
	// flushed has the result of the disk flush a JSON exec starts when
	// the sidecar's answer begins (nil before, and for a stream).
	flushed <-chan error
}

// event takes one NDJSON line of a streamed exec.
func (o *execOutcome) event(line []byte) {
	var ev api.ExecEvent
	if json.Unmarshal(line, &ev) != nil || ev.Type != api.EventExit {
		return
	}
	code := ev.ExitCode
	o.exitCode = &code
	o.output = ev.ExecOutputInfo
}

// result takes a JSON answer (a stream has none).
func (o *execOutcome) result(captured []byte) {
	if captured == nil {
		return
	}
	// Only what the audit needs: stdout and stderr are skipped, not
	// decoded into a copy of the output.
	var res struct {
		ExitCode int `json:"exit_code"`
		api.ExecOutputInfo
	}
	if json.Unmarshal(captured, &res) != nil {
		return
	}
	o.exitCode = &res.ExitCode
	o.output = res.ExecOutputInfo
}

// envAssignments is the names of an exec's env and secret_env as a line
// of assignments, which the allowlist checks with the command: a variable
// it refuses to see assigned in the command (PATH, LD_PRELOAD,
// GIT_EXTERNAL_DIFF, …) is refused when set through env too
// (seccheck26). Names the sidecar refuses anyway are left out; values do
// not matter.
func envAssignments(envs ...map[string]string) string {
	var names []string
	for _, env := range envs {
		for name := range env {
			if envName.MatchString(name) {
				names = append(names, name+"=")
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return strings.Join(names, " ") + "\n"
}

// envName is a variable name the sidecar accepts in env.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
