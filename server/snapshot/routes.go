package snapshot

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the snapshot routes, each authenticated by API key.
func (s *Service) Routes() []httpx.Route {
	key := func(d httpx.RouteDoc, h httpx.Handler) httpx.Route {
		return httpx.Route{RouteDoc: d, Cred: httpx.CredAPIKey, Handler: h}
	}
	return []httpx.Route{
		key(httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/snapshots", Summary: "Snapshot a sandbox's filesystem, crash-consistent (its processes frozen for the copy); at most 10 per account by default (429 snapshot_limit_reached)", Request: api.CreateSnapshotRequest{}, Response: api.Snapshot{}, Status: http.StatusCreated}, s.create),
		key(httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/snapshots", Summary: "List a sandbox's snapshots, newest first", Response: []api.Snapshot{}}, s.listOfSandbox),
		key(httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/fork", Summary: "Fork a sandbox count ways: each child starts from its filesystem as it is now, copy-on-write where the driver can", Request: api.ForkSandboxRequest{}, Response: []api.Sandbox{}, Status: http.StatusCreated}, s.fork),
		key(httpx.RouteDoc{Pattern: "GET /v1/snapshots", Summary: "List the account's snapshots, newest first", Response: []api.Snapshot{}}, s.list),
		key(httpx.RouteDoc{Pattern: "GET /v1/snapshots/{id}", Summary: "Get one snapshot", Response: api.Snapshot{}}, s.get),
		key(httpx.RouteDoc{Pattern: "DELETE /v1/snapshots/{id}", Summary: "Delete a snapshot; sandboxes restored from it keep their files", Status: http.StatusNoContent}, s.delete),
		key(httpx.RouteDoc{Pattern: "POST /v1/snapshots/{id}/restore", Summary: "Create a new sandbox from a snapshot", Request: api.RestoreSnapshotRequest{}, Response: api.Sandbox{}, Status: http.StatusCreated}, s.restore),
	}
}
