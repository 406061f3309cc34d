package exec

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the exec routes. Both take an API key or a takeover token
// (a read-only grant may not run commands); the WebSocket also takes
// ?api_key= for browsers.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/exec", Summary: "Run a shell command; with Accept: application/x-ndjson the output streams as ExecEvent lines", Request: api.ExecRequest{}, Response: api.ExecResult{}, NDJSON: api.ExecEvent{}}, Cred: httpx.CredTakeover, Handler: s.exec},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/exec/interactive", Summary: "WebSocket: a command (or the sftp subsystem) with streamed stdin, on a PTY or pipes (binary frames prefixed by stream; text frames for resize, eof and exit)", Auth: httpx.AuthKeyQuery, Status: http.StatusSwitchingProtocols, Query: []string{"command", "subsystem", "tty", "cols", "rows", "term", "cwd"}}, Cred: httpx.CredTakeover, Handler: s.interactive},
	}
}
