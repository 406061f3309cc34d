package sandbox

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the lifecycle's routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes", Summary: "Create one sandbox, or count of them (then the answer is an array)", Request: api.CreateSandboxRequest{}, Response: api.Sandbox{}, Status: http.StatusCreated}, Cred: httpx.CredAPIKey, Handler: s.createSandbox},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes", Summary: "List the account's sandboxes, newest first; active_only=true lists those active or paused; limit=N (1..1000) answers one page and a Link rel=\"next\" header to the next (cursor=)", Response: []api.Sandbox{}, Query: []string{"active_only", "limit", "cursor"}}, Cred: httpx.CredAPIKey, Handler: s.listSandboxes},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}", Summary: "Get one sandbox", Response: api.Sandbox{}}, Cred: httpx.CredAPIKey, Handler: s.getSandbox},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/sandboxes/{id}", Summary: "Destroy a sandbox", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: s.deleteSandbox},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/extend", Summary: "Push a sandbox's expiry out, within the server's ceiling", Request: api.ExtendSandboxRequest{}, Response: api.Sandbox{}}, Cred: httpx.CredAPIKey, Handler: s.extendSandbox},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/pause", Summary: "Pause a sandbox (mode freeze, the default, filesystem or checkpoint); its lifetime stops counting", Request: api.PauseSandboxRequest{}, Response: api.Sandbox{}}, Cred: httpx.CredAPIKey, Handler: s.pauseSandbox},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/resume", Summary: "Resume a paused sandbox: same id and endpoints, expiry moved on by the time paused; after a filesystem pause, what became of its background processes", Response: api.ResumeResult{}}, Cred: httpx.CredAPIKey, Handler: s.resumeSandbox},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/stats", Summary: "The sandbox's memory and tasks now, from the driver's accounting (local: its cgroup, and its disk's use and size; kube: its pod's container's cgroup, read by the pod's sidecar, and no disk); 501 not_supported without", Response: api.SandboxStats{}}, Cred: httpx.CredAPIKey, Handler: s.sandboxStats},
	}
}
