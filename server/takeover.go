package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
)

// Limits of the takeover relay.
const (
	takeoverDialTimeout = 10 * time.Second
	// takeoverClientFrame bounds one frame a person sends: keystrokes, a
	// paste, a resize.
	takeoverClientFrame = 1 << 20
	// takeoverSidecarFrame bounds one frame from the sidecar: terminal
	// output, or the scrollback replayed to a late joiner.
	takeoverSidecarFrame = 16 << 20
)

// takeoverGrant is who takes over a sandbox's terminal, and how.
//
// Today the only way to get one is an admin API key in the Authorization
// header. The single-use ?token= minted by POST …/takeover-token, session
// recording and the SSH bastion come later; they produce or consume the
// same grant, so the relay below does not change.
type takeoverGrant struct {
	keyID, keyName string
	readOnly       bool
}

var errTakeoverNotPermitted = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeTakeoverNotPermitted,
	Message: "this API key may not take over a sandbox's terminal",
	Hint:    "use an admin key; member keys can run commands but not type into the terminal",
}

// authorizeTakeover decides, before the upgrade, whether the
// authenticated caller may attach.
func (s *Server) authorizeTakeover(r *http.Request) (takeoverGrant, error) {
	key := infoFrom(r.Context()).key
	if key.Role != RoleAdmin {
		return takeoverGrant{}, errTakeoverNotPermitted
	}
	g := takeoverGrant{keyID: key.ID, keyName: key.Name}
	if v := r.URL.Query().Get("read_only"); v != "" {
		ro, err := strconv.ParseBool(v)
		if err != nil {
			return takeoverGrant{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "read_only %q is not a boolean", v).
				WithHint("use read_only=1 to watch without typing")
		}
		g.readOnly = ro
	}
	return g, nil
}

// takeover serves WS /v1/sandboxes/{id}/takeover (`boxkite attach`): it
// relays WebSocket frames both ways, unchanged, between the client and the
// sidecar's /pty. Binary frames are terminal bytes; a text frame is a
// control message (resize) the sidecar interprets. Every failure before
// the relay starts, the sidecar's included, is a plain HTTP error.
func (s *Server) takeover(w http.ResponseWriter, r *http.Request) error {
	grant, err := s.authorizeTakeover(r)
	if err != nil {
		return err
	}
	sb, err := s.loadSandbox(r)
	if err != nil {
		return err
	}
	if !sb.Active() {
		return notActive(sb)
	}
	up, err := s.dialPTY(r, sb, grant.readOnly)
	if err != nil {
		return err
	}
	defer up.CloseNow()
	// The key is checked in a header a browser cannot send cross-origin,
	// so an Origin check would add nothing. The token path must revisit this.
	down, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil // Accept answered the failed handshake itself
	}
	defer down.CloseNow()
	down.SetReadLimit(takeoverClientFrame)
	up.SetReadLimit(takeoverSidecarFrame)

	started := s.now()
	detail := func() map[string]any {
		return map[string]any{"api_key_id": grant.keyID, "api_key_name": grant.keyName, "read_only": grant.readOnly}
	}
	s.audit(r.Context(), auditRecord{
		sb: sb, source: api.LogSourceHumanTakeover, operation: "takeover_start", detail: detail(), started: started,
	})
	typed := s.relayPTY(r.Context(), down, up, grant.readOnly)
	end := detail()
	end["bytes_typed"] = typed
	s.audit(r.Context(), auditRecord{
		sb: sb, source: api.LogSourceHumanTakeover, operation: "takeover_end", detail: end,
		started: started, duration: s.now().Sub(started),
	})
	return nil
}

// dialPTY opens the sidecar's /pty over the sandbox's endpoint.
func (s *Server) dialPTY(r *http.Request, sb *Sandbox, readOnly bool) (*websocket.Conn, error) {
	client, err := s.sidecars.client(sb.ID, sb.Endpoint)
	if err != nil {
		s.log.ErrorContext(r.Context(), "sidecar client", "sandbox", sb.ID, "err", err)
		return nil, sandboxFailed("reach")
	}
	q := url.Values{}
	if readOnly {
		q.Set("read_only", "1")
	}
	u := "ws://sidecar/pty"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	hdr := http.Header{"X-Sidecar-Auth-Token": {sb.Endpoint.Token}}
	if ri := infoFrom(r.Context()); ri != nil {
		hdr.Set("X-Request-ID", ri.id)
	}
	ctx, cancel := context.WithTimeout(r.Context(), takeoverDialTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client, HTTPHeader: hdr})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		s.log.ErrorContext(r.Context(), "dial sidecar pty", "sandbox", sb.ID, "status", status, "err", err)
		return nil, api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "could not reach the sandbox's terminal").
			WithHint("the sandbox may have stopped; check it with `boxkite session get`")
	}
	return conn, nil
}

// relayPTY copies frames between the client (down) and the sidecar (up)
// until either side closes, then closes the other with the same status,
// and returns how many terminal bytes the client typed. A read-only
// client's frames are dropped here as well as by the sidecar.
func (s *Server) relayPTY(ctx context.Context, down, up *websocket.Conn, readOnly bool) int64 {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type ended struct {
		fromClient bool
		err        error
	}
	ends := make(chan ended, 2)
	var typed int64
	go func() {
		for {
			typ, data, err := down.Read(ctx)
			if err != nil {
				ends <- ended{true, err}
				return
			}
			if readOnly {
				continue
			}
			if typ == websocket.MessageBinary {
				typed += int64(len(data))
			}
			if err := up.Write(ctx, typ, data); err != nil {
				ends <- ended{false, err}
				return
			}
		}
	}()
	go func() {
		for {
			typ, data, err := up.Read(ctx)
			if err == nil {
				err = down.Write(ctx, typ, data)
				if err != nil {
					ends <- ended{true, err}
					return
				}
				continue
			}
			ends <- ended{false, err}
			return
		}
	}()
	first := <-ends
	// Pass the closing side's status on to the other side, so `boxkite
	// attach` learns why its shell went away.
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
	var wg sync.WaitGroup
	wg.Go(func() { _ = down.Close(code, reason) })
	wg.Go(func() { _ = up.Close(code, reason) })
	wg.Wait()
	cancel()
	<-ends
	return typed
}
