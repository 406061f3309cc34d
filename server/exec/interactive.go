package exec

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// interactiveFrame bounds one frame either way: a chunk of stdin or of
// output (the sidecar sends at most 32 KiB), or a control message.
const interactiveFrame = 1 << 20

// sftpAllowlistCommand is what the allowlist is asked about for the sftp
// subsystem: an account that restricts commands allows file transfer over
// ssh by allowing this name.
const sftpAllowlistCommand = "sftp-server"

// interactive serves WS /v1/sandboxes/{id}/exec/interactive: a command
// (or the sftp subsystem) with streamed stdin, on a PTY or pipes, relayed
// frame by frame to the sidecar's /exec/interactive (api.InteractiveRequest
// has the protocol). Authentication, the allowlist and the audit are as
// for POST …/exec; a read-only takeover token cannot run commands. The
// exit frame is held until the audit entry is written.
func (s *Service) interactive(w http.ResponseWriter, r *http.Request) error {
	req, err := api.ParseInteractiveRequest(r.URL.Query())
	if err != nil {
		return err
	}
	grant := authz.From(r.Context()).Grant
	if grant != nil && grant.ReadOnly {
		return authz.ErrReadOnlyExec
	}
	sb, err := s.d.LoadActive(r)
	if err != nil {
		return err
	}
	command := req.Command
	if req.Subsystem == api.SubsystemSFTP {
		command = sftpAllowlistCommand
	}
	if err := s.d.CheckCommand(r, command); err != nil {
		return err
	}
	up, err := s.d.DialSidecarWS(r, sb, "/exec/interactive", req.Query(), "could not start the command in the sandbox")
	if err != nil {
		return err
	}
	defer up.CloseNow()
	down, ok := httpx.AcceptWebSocket(w, r, interactiveFrame)
	if !ok {
		return nil
	}
	defer down.CloseNow()
	up.SetReadLimit(interactiveFrame)

	// A pause ends the command's relay as it ends every call in flight,
	// a freeze included (which would otherwise hold it without a word
	// until the resume): the client learns the sandbox was paused.
	stopWatching := s.d.Calls.Watch(sb.ID, func(cause error) {
		if e, ok := cause.(*api.Error); ok && e.Code == api.CodeSandboxPaused {
			_ = up.CloseNow()
		}
	})
	defer stopWatching()
	started := s.d.Now()
	res, wait := relayInteractive(r.Context(), down, up)
	defer wait()
	if errors.Is(context.Cause(r.Context()), authz.ErrCredentialRevoked) {
		res.revoked = authz.SessionEndReason(r.Context())
	}
	detail := map[string]any{
		"command": audit.LoggedText(command), "interactive": true, "tty": req.TTY,
		"stdin_bytes": res.in.Load(), "stdout_bytes": res.out[api.StreamStdout].Load(), "stderr_bytes": res.out[api.StreamStderr].Load(),
	}
	if req.Subsystem != "" {
		detail["subsystem"] = req.Subsystem
	}
	source := ""
	if grant != nil {
		// ssh id@host through the bastion: a person, not an agent.
		source = api.LogSourceHumanTakeover
		maps.Copy(detail, grant.Detail())
	}
	if s.interactiveMemoryStop(r.Context(), sb, res) {
		detail["stop_reason"] = api.StopReasonMemoryLimit
	}
	s.d.ObserveExec(s.d.Now().Sub(started))
	s.d.Audit.Append(r.Context(), audit.Record{
		Sandbox: sb, Source: source, Operation: "exec", Detail: detail, ExitCode: res.exit.ExitCode,
		Started: started, Duration: s.d.Now().Sub(started),
	})
	if res.raw == nil {
		res.ended = s.d.EndedAnswer(r.Context(), sb)
		if res.ended != nil && res.ended.Code == api.CodeSandboxPaused {
			// Its refusal says "is paused" and how to resume; the close
			// reason has room for the one line (api.CloseSandboxEnded).
			res.ended = api.Errorf(res.ended.Status, res.ended.Code, "sandbox %s was paused while the command ran", sb.ID)
		}
	}
	res.finish(r.Context(), down)
	return nil
}

// interactiveMemoryStop gives the held exit frame stop_reason
// memory_limit when the command ended with the exit code of a SIGKILL
// while the sandbox's memory limit killed one of its processes
// (Deps.MemoryKilled, asked only then, as for POST …/exec), and reports
// whether it did. A stop_reason in the sidecar's own frame is dropped:
// only the control plane's count says it.
func (s *Service) interactiveMemoryStop(ctx context.Context, sb *model.Sandbox, res *interactiveResult) bool {
	if res.raw == nil {
		return false
	}
	killed := res.exit.ExitCode != nil && *res.exit.ExitCode == api.ExitCodeKilled && s.d.MemoryKilled(ctx, sb)
	if !killed && res.exit.StopReason == "" {
		return false
	}
	res.exit.StopReason = ""
	if killed {
		res.exit.StopReason = api.StopReasonMemoryLimit
	}
	if b, err := json.Marshal(res.exit); err == nil {
		res.raw = b
	}
	return killed
}

// interactiveResult is what the relay saw: bytes each way and the exit
// frame, which it keeps back for finish.
type interactiveResult struct {
	in   atomic.Int64
	out  [3]atomic.Int64 // by stream
	exit api.InteractiveControl
	raw  []byte // the exit frame as the sidecar sent it
	// ended is why the sandbox ended under a command that sent no exit
	// frame (destroyed, expired, lost), or nil.
	ended *api.Error
	// revoked is why the client's side was closed when the request's
	// credential was revoked under the command, or "".
	revoked string
}

// finish sends the held exit frame and closes the client's side.
func (res *interactiveResult) finish(ctx context.Context, down *websocket.Conn) {
	if res.revoked != "" {
		return // relayInteractive closed it, saying why
	}
	if res.raw == nil && res.ended != nil {
		_ = down.Close(api.CloseSandboxEnded, closeReason(res.ended.Message))
		return
	}
	if res.raw == nil {
		_ = down.Close(websocket.StatusGoingAway, "the sandbox ended the command without an exit status")
		return
	}
	if down.Write(ctx, websocket.MessageText, res.raw) == nil {
		_ = down.Close(websocket.StatusNormalClosure, "")
	}
}

// relayInteractive copies frames between the client (down) and the
// sidecar (up) until the sidecar is done or the client leaves, counting
// bytes and holding back the sidecar's exit frame. The client's side stays
// open for finish; wait returns once its reader has stopped, after finish
// closed it. (A cancelled context closes a coder/websocket connection, so
// the client's side is only ever read with ctx, never with upCtx.) When
// request's credential is revoked, the client's side is closed with a
// policy-violation status naming that (as a takeover's is), which ends
// the command as the client's leaving does; the reads and writes run on a
// context the revocation leaves alone, or the connection would be dropped
// without a word.
func relayInteractive(request context.Context, down, up *websocket.Conn) (res *interactiveResult, wait func()) {
	ctx, cancel := authz.SurvivingContext(request)
	stopWatching := context.AfterFunc(request, func() {
		if errors.Is(context.Cause(request), authz.ErrCredentialRevoked) {
			_ = down.Close(websocket.StatusPolicyViolation, authz.SessionEndReason(request))
		}
	})
	upCtx, cancelUp := context.WithCancel(ctx)
	res = &interactiveResult{}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancelUp() // the client left: the sidecar's side goes, and the command with it
		for {
			typ, data, err := down.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary && len(data) > 0 && data[0] == api.StreamStdin {
				res.in.Add(int64(len(data) - 1))
			}
			if up.Write(upCtx, typ, data) != nil {
				return
			}
		}
	})
	for {
		typ, data, err := up.Read(upCtx)
		if err != nil {
			break
		}
		if typ == websocket.MessageText {
			var c api.InteractiveControl
			if json.Unmarshal(data, &c) == nil && c.Type == api.InteractiveExit {
				res.exit, res.raw = c, data
				continue
			}
		} else if len(data) > 0 && int(data[0]) < len(res.out) {
			res.out[data[0]].Add(int64(len(data) - 1))
		}
		if down.Write(ctx, typ, data) != nil {
			break
		}
	}
	_ = up.Close(websocket.StatusNormalClosure, "")
	cancelUp()
	return res, func() {
		wg.Wait()
		stopWatching()
		cancel()
	}
}

// closeReason fits s into a close frame's 123 bytes, on a rune boundary.
func closeReason(s string) string {
	for len(s) > 123 {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	return s
}
