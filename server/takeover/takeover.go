package takeover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// Limits of the takeover relay.
const (
	// takeoverClientFrame bounds one frame a person sends: keystrokes, a
	// paste, a resize.
	takeoverClientFrame = 1 << 20
	// takeoverSidecarFrame bounds one frame from the sidecar: terminal
	// output, or the scrollback replayed to a late joiner.
	takeoverSidecarFrame = 16 << 20
)

var errTakeoverNotPermitted = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeTakeoverNotPermitted,
	Message: "this API key may not take over a sandbox's terminal",
	Hint:    "use an admin key; member keys can run commands but not type into the terminal",
}

// authorizeTakeover decides, before the upgrade, whether the
// authenticated caller may attach.
func (s *Service) authorizeTakeover(r *http.Request) (authz.Grant, error) {
	ri := authz.From(r.Context())
	var g authz.Grant
	switch {
	case ri.Grant != nil:
		g = *ri.Grant
	case ri.Key.Role != model.RoleAdmin:
		return authz.Grant{}, errTakeoverNotPermitted
	default:
		g = authz.Grant{KeyID: ri.Key.ID, KeyName: ri.Key.Name, KeyExpiresAt: ri.Key.ExpiresAt, KeyDemotions: ri.Key.Demotions, Via: authz.ViaAPIKey}
	}
	if v := r.URL.Query().Get("read_only"); v != "" {
		ro, err := strconv.ParseBool(v)
		if err != nil {
			return authz.Grant{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "read_only %q is not a boolean", v).
				WithHint("use read_only=1 to watch without typing")
		}
		g.ReadOnly = g.ReadOnly || ro // a read-only token stays read-only
	}
	return g, nil
}

// takeover serves WS /v1/sandboxes/{id}/takeover (`boxkite attach`): it
// relays WebSocket frames both ways, unchanged, between the client and the
// sidecar's /pty. Binary frames are terminal bytes; a text frame is a
// control message (resize) the sidecar interprets. Every failure before
// the relay starts, the sidecar's included, is a plain HTTP error.
func (s *Service) takeover(w http.ResponseWriter, r *http.Request) error {
	grant, err := s.authorizeTakeover(r)
	if err != nil {
		return err
	}
	sb, err := s.loadAudited(r)
	if err != nil {
		return err
	}
	up, err := s.dialPTY(r, sb, grant.ReadOnly)
	if err != nil {
		return err
	}
	defer up.CloseNow()
	down, ok := httpx.AcceptWebSocket(w, r, takeoverClientFrame)
	if !ok {
		return nil
	}
	defer down.CloseNow()
	up.SetReadLimit(takeoverSidecarFrame)

	started := s.d.Now()
	if err := s.d.Audit.Append(r.Context(), audit.Record{
		Sandbox: sb, Source: api.LogSourceHumanTakeover, Operation: "takeover_start", Detail: grant.Detail(), Started: started,
	}); err != nil {
		// Nobody types into a terminal that is off the record.
		down.Close(websocket.StatusTryAgainLater, "the audit log cannot be written; try again later")
		return nil
	}
	in := newTypedInput()
	flushed := make(chan struct{})
	ctx, stopFlushing := context.WithCancel(r.Context())
	relayCtx, endRelay := context.WithCancel(r.Context())
	defer endRelay()
	go func() {
		defer close(flushed)
		if !s.flushTypedInput(ctx, sb, grant, in) {
			endRelay() // typed input is no longer recorded: end the session
		}
	}()
	hooks := relayHooks{typed: in.add, idleDetach: s.d.DetachesWhenIdle(sb.ID)}
	var rec *recorder
	if s.d.Recording {
		rec = newRecorder(s.d.Now)
		hooks.output, hooks.control = rec.output, rec.control
	}
	stopWatching, paused := s.watchPause(sb, up)
	defer stopWatching()
	hooks.ended = func() *api.Error {
		if paused() {
			return api.Errorf(http.StatusConflict, api.CodeSandboxPaused, "sandbox %s was paused", sb.ID)
		}
		return s.sandboxEnded(r.Context(), sb)
	}
	typed := s.relayPTY(relayCtx, down, up, grant.ReadOnly, hooks)
	stopFlushing()
	<-flushed
	end := grant.Detail()
	end["bytes_typed"] = typed
	if rec != nil {
		s.saveRecording(r.Context(), sb, rec, end)
	}
	// A failure here leaves the entry waiting in the audit gate: the
	// session is over either way.
	_ = s.d.Audit.Append(r.Context(), audit.Record{
		Sandbox: sb, Source: api.LogSourceHumanTakeover, Operation: "takeover_end", Detail: end,
		Started: started, Duration: s.d.Now().Sub(started),
	})
	return nil
}

// maxTypedLog caps the typed bytes one takeover puts in the audit log,
// as the reference caps output: past it, entries say output_truncated.
const maxTypedLog = 10 << 20

// typedInput collects what a person types between two flushes.
type typedInput struct {
	mu       sync.Mutex
	buf      []byte
	logged   int
	dropped  bool // input was cut at maxTypedLog
	reported bool // and a flush has said so
	// entered is signalled when a line ends (Enter): the command it
	// runs goes on the record, and to live watchers, at once.
	entered chan struct{}
}

func newTypedInput() *typedInput { return &typedInput{entered: make(chan struct{}, 1)} }

func (t *typedInput) add(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	room := maxTypedLog - t.logged - len(t.buf)
	if len(b) > room {
		b, t.dropped = b[:max(room, 0)], true
	}
	t.buf = append(t.buf, b...)
	if bytes.ContainsAny(b, "\r\n") {
		select {
		case t.entered <- struct{}{}:
		default: // a flush is due already
		}
	}
}

// take returns and clears the bytes collected since the last take, and
// whether input was cut, once.
func (t *typedInput) take() ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, cut := t.buf, t.dropped && !t.reported
	t.buf, t.reported = nil, t.dropped
	t.logged += len(b)
	return b, cut
}

// flushTypedInput writes a takeover_input entry with the bytes typed so
// far when a line is entered, at least every TakeoverFlushInterval, and a
// last one when ctx ends, so keystrokes are on the record while the
// session is still open and a command shows in the live log as it runs. It
// returns false, at once, when an entry could not be committed: the
// caller ends the session.
func (s *Service) flushTypedInput(ctx context.Context, sb *model.Sandbox, g authz.Grant, in *typedInput) bool {
	tick := time.NewTicker(s.d.FlushInterval)
	defer tick.Stop()
	flush := func() bool {
		b, truncated := in.take()
		if len(b) == 0 && !truncated {
			return true
		}
		d := g.Detail()
		d["input"], d["bytes"] = string(b), len(b)
		return s.d.Audit.Append(ctx, audit.Record{
			Sandbox: sb, Source: api.LogSourceHumanTakeover, Operation: "takeover_input", Detail: d,
			OutputTruncated: truncated, Started: s.d.Now(),
		}) == nil
	}
	for {
		select {
		case <-tick.C:
			if !flush() {
				return false
			}
		case <-in.entered:
			if !flush() {
				return false
			}
		case <-ctx.Done():
			return flush()
		}
	}
}

// dialPTY opens the sidecar's /pty over the sandbox's endpoint.
func (s *Service) dialPTY(r *http.Request, sb *model.Sandbox, readOnly bool) (*websocket.Conn, error) {
	q := url.Values{}
	if readOnly {
		q.Set("read_only", "1")
	}
	return s.d.DialSidecarWS(r, sb, "/pty", q, "could not reach the sandbox's terminal")
}

// relayPTY copies frames between the client (down) and the sidecar (up)
// until either side closes, then closes the other with the same status,
// and returns how many terminal bytes the client typed. hooks see the
// frames on their way. A read-only
// client's frames are dropped here as well as by the sidecar.
// relayHooks see the frames relayPTY passes: typed terminal bytes, output,
// and the control frames of a client that may type. Nil hooks are skipped.
type relayHooks struct {
	typed, output, control func([]byte)
	// ended, asked when the terminal's side ended first, is why its
	// sandbox ended (destroyed, expired, lost), or nil.
	ended func() *api.Error
	// idleDetach: the terminal's side answers a detach until_idle
	// (Deps.DetachesWhenIdle); without it such a detach is a plain one.
	idleDetach bool
}

// sandboxEnded is why sb's terminal went, when the sandbox went with it
// (destroyed, expired, lost): EndedAnswer's, one wording whether the
// destroy still runs or has finished; nil while it is active or paused.
func (s *Service) sandboxEnded(ctx context.Context, sb *model.Sandbox) *api.Error {
	if e := s.d.EndedAnswer(ctx, sb); e != nil && e.Code != api.CodeSandboxPaused {
		return e
	}
	return nil
}

// watchPause ends the terminal's side of a takeover (up) when sandbox sb
// is paused, in any mode: a freeze would otherwise hold the person's
// terminal without a word until the resume. paused reports whether it did.
func (s *Service) watchPause(sb *model.Sandbox, up *websocket.Conn) (stop func(), paused func() bool) {
	var p atomic.Bool
	stop = s.d.WatchCalls(sb.ID, func(cause error) {
		if e, ok := cause.(*api.Error); ok && e.Code == api.CodeSandboxPaused {
			p.Store(true)
			_ = up.CloseNow()
		}
	})
	return stop, p.Load
}

func (s *Service) relayPTY(ctx context.Context, down, up *websocket.Conn, readOnly bool, hooks relayHooks) int64 {
	// A revoked credential closes the client's side with a status that
	// says so; the reads must not end first (a cancelled read drops the
	// connection without a word).
	request := ctx
	ctx, cancel := authz.SurvivingContext(ctx)
	defer cancel()
	stopWatching := context.AfterFunc(request, func() {
		if errors.Is(context.Cause(request), authz.ErrCredentialRevoked) {
			_ = down.Close(websocket.StatusPolicyViolation, authz.SessionEndReason(request))
		}
	})
	defer stopWatching()
	ends := make(chan relayEnd, 2)
	var typed int64 // read once both relays have ended
	go func() { ends <- s.relayInput(ctx, down, up, readOnly, hooks, &typed) }()
	go func() { ends <- relayOutput(ctx, down, up, hooks) }()
	first := <-ends
	// Pass the closing side's status on to the other side, so `boxkite
	// attach` learns why its shell went away.
	code, reason := closeStatus(request, first)
	if !first.fromClient && hooks.ended != nil {
		if e := hooks.ended(); e != nil {
			code, reason = api.CloseSandboxEnded, closeReason(e.Message)
		}
	}
	var wg sync.WaitGroup
	if first.detached {
		// The terminal's side has the input once it answered the close:
		// only then does the client learn that it ended.
		_ = up.Close(code, reason)
	}
	wg.Go(func() { _ = down.Close(code, reason) })
	wg.Go(func() { _ = up.Close(code, reason) })
	wg.Wait()
	cancel()
	<-ends
	return typed
}

// relayInput passes the client's frames (down) on to the terminal (up)
// until either side fails or the client detaches, counting the bytes
// typed into *typed; a read-only client's input is dropped.
func (s *Service) relayInput(ctx context.Context, down, up *websocket.Conn, readOnly bool, hooks relayHooks, typed *int64) relayEnd {
	for {
		typ, data, err := down.Read(ctx)
		if err != nil {
			return relayEnd{fromClient: true, err: err}
		}
		d, ok := detachOf(typ, data)
		if ok && d.UntilIdle && !hooks.idleDetach {
			// An older sidecar ignores the frame and would never
			// close: end as a plain detach, as before it had one.
			s.d.Log.InfoContext(ctx, "the sandbox's sidecar predates the until_idle detach; detaching at once")
		}
		if ok && d.UntilIdle && hooks.idleDetach {
			// The terminal's side answers once its shell ran what
			// came before, after the output until then, with a
			// normal close the other relay passes on.
			if err := up.Write(ctx, typ, data); err != nil {
				return relayEnd{fromClient: false, err: err}
			}
			continue
		} else if ok {
			// Everything before it was relayed; end as a close would.
			return relayEnd{fromClient: true, err: websocket.CloseError{Code: websocket.StatusNormalClosure, Reason: "detached"}, detached: true}
		}
		if readOnly {
			continue
		}
		switch {
		case typ == websocket.MessageBinary:
			*typed += int64(len(data))
			if hooks.typed != nil {
				hooks.typed(data)
			}
		case hooks.control != nil:
			hooks.control(data)
		}
		if err := up.Write(ctx, typ, data); err != nil {
			return relayEnd{fromClient: false, err: err}
		}
	}
}

// relayOutput passes the terminal's frames (up) on to the client (down)
// until either side fails.
func relayOutput(ctx context.Context, down, up *websocket.Conn, hooks relayHooks) relayEnd {
	for {
		typ, data, err := up.Read(ctx)
		if err != nil {
			return relayEnd{fromClient: false, err: err}
		}
		if typ == websocket.MessageBinary && hooks.output != nil {
			hooks.output(data)
		}
		if err := down.Write(ctx, typ, data); err != nil {
			return relayEnd{fromClient: true, err: err}
		}
	}
}

// detachOf is a client's frame as a detach control, if it is one.
func detachOf(typ websocket.MessageType, b []byte) (api.PTYControl, bool) {
	var c api.PTYControl
	ok := typ == websocket.MessageText && json.Unmarshal(b, &c) == nil && c.Type == api.PTYControlDetach
	return c, ok
}

// relayEnd is how one direction of a relay ended: the error, and whether
// the client's side was the one that failed.
type relayEnd struct {
	fromClient bool
	err        error
	detached   bool // the client sent a detach control
}

// closeReason fits s into a close frame's 123 bytes, on a rune boundary.
func closeReason(s string) string {
	for len(s) > 123 {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	return s
}

// closeStatus is the close status both sides get once first ended the
// relay: the closing side's own, going away for a terminal that went, or
// policy violation when request's credential was revoked.
func closeStatus(request context.Context, first relayEnd) (websocket.StatusCode, string) {
	code, reason := websocket.StatusNormalClosure, ""
	var ce websocket.CloseError
	if errors.As(first.err, &ce) {
		switch ce.Code {
		case websocket.StatusNoStatusRcvd, websocket.StatusAbnormalClosure, websocket.StatusTLSHandshake:
			// reserved: never sent in a close frame
		default:
			code, reason = ce.Code, ce.Reason
		}
	} else if !first.fromClient {
		code, reason = websocket.StatusGoingAway, "the sandbox's terminal went away"
	}
	if errors.Is(context.Cause(request), authz.ErrCredentialRevoked) {
		// The terminal itself stays: only this credential's view of it ends.
		code, reason = websocket.StatusPolicyViolation, authz.SessionEndReason(request)
	}
	return code, reason
}
