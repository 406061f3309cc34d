package status

import (
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the status routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /health", Summary: "Liveness: the server process is up", Auth: httpx.AuthNone, Response: api.Health{}}, Cred: httpx.CredNone, Handler: s.health},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /health/ready", Summary: "Readiness: the store and driver answer", Auth: httpx.AuthNone, Response: api.Health{}}, Cred: httpx.CredNone, Handler: s.ready},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /metrics", Summary: "Prometheus metrics (text format 0.0.4)", Auth: httpx.AuthNone, Produces: "text/plain"}, Cred: httpx.CredNone, Handler: s.metrics},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/usage", Summary: "Sandbox usage against the fair-use limits", Response: api.Usage{}}, Cred: httpx.CredAPIKey, Handler: s.usage},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/host", Summary: "The host's use of its limits (disk against the free-space watermark, threads, loop devices, memory), the audit log's state and the active sandboxes' disks (admin keys)", Response: api.HostStatus{}}, Cred: httpx.CredAPIKey, Handler: s.host},
	}
}
