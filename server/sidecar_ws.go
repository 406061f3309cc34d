package server

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// sidecarWSDialTimeout bounds opening a WebSocket route of a sidecar.
const sidecarWSDialTimeout = 10 * time.Second

// dialSidecarWS opens a WebSocket route of the sidecar over the sandbox's
// endpoint. A refusal is logged with the sidecar's status and becomes
// 502 sandbox_failed with failMsg, or the sidecar's own error when it
// answered with one (a bad cwd, an exhausted exec budget).
func (s *Server) dialSidecarWS(r *http.Request, sb *model.Sandbox, path string, q url.Values, failMsg string) (*websocket.Conn, error) {
	if err := s.sandboxes.FrozenAnswer(sb.ID); err != nil {
		return nil, err
	}
	client, err := s.sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		s.log.ErrorContext(r.Context(), "sidecar client", "sandbox", sb.ID, "err", err)
		return nil, model.SandboxFailed("reach")
	}
	u := "ws://sidecar" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	hdr := http.Header{api.HeaderSidecarToken: {sb.Endpoint.Token}}
	if id := httpx.RequestID(r.Context()); id != "" {
		hdr.Set("X-Request-ID", id)
	}
	ctx, cancel := context.WithTimeout(r.Context(), sidecarWSDialTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client, HTTPHeader: hdr})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
			if e := sidecar.Outdated(resp, http.MethodGet, path, sb.ID); e != nil {
				return nil, e
			}
			if e := sidecar.Refusal(resp); e != nil {
				return nil, e
			}
		}
		s.log.ErrorContext(r.Context(), "dial sidecar websocket", "sandbox", sb.ID, "path", path, "status", status, "err", err)
		if status == 0 {
			if e := s.sandboxes.Unreachable(r.Context(), sb); e.Code == api.CodeSandboxLost {
				return nil, e
			}
		}
		return nil, api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "%s", failMsg).
			WithHint("the sandbox may have stopped; check it with `boxkite session get`")
	}
	return conn, nil
}
