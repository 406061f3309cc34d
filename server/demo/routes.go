package demo

import (
	"net/http"

	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the playground's routes: no key; a sandbox's token in
// X-Demo-Token.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/demo/sandboxes", Summary: "Demo playground: a sandbox without a key (4 minutes, 3 at once, 3 a minute per address)", Response: PlaygroundSandbox{}, Status: http.StatusCreated}, Cred: httpx.CredNone, Handler: s.create},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/demo/sandboxes/{id}/exec", Summary: "Demo playground: run a command (X-Demo-Token; output capped at 20 KiB per stream, 10 s)", Request: PlaygroundExecRequest{}, Response: PlaygroundExecResult{}}, Cred: httpx.CredNone, Handler: s.exec},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/demo/sandboxes/{id}", Summary: "Demo playground: destroy a demo sandbox (X-Demo-Token)", Status: http.StatusNoContent}, Cred: httpx.CredNone, Handler: s.destroy},
	}
}
