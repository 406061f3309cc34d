package storagesync

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// RouteDeps is what the storage routes need of the control plane.
type RouteDeps struct {
	// LoadSandbox loads the request's {id} sandbox for its caller, also
	// one destroyed (an *api.Error for one it may not see: 404 for
	// another account's).
	LoadSandbox func(*http.Request) (*model.Sandbox, error)
}

// Routes lists the storage sync's routes. s may be nil (no object storage
// configured): they answer storage_unavailable.
func (s *Service) Routes(d RouteDeps) []httpx.Route {
	h := &routes{s: s, d: d}
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/sync", Summary: "The workspace sync's state: pending writes, last flush, the last error and the next retry (docs/storage.md)", Response: api.SyncStatus{}}, Cred: httpx.CredAPIKey, Handler: h.status},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/sync/flush", Summary: "Flush the workspace to object storage now, without waiting for files to settle; 502 storage_failed when the store refuses", Response: api.SyncStatus{}}, Cred: httpx.CredAPIKey, Handler: h.flush},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/storage/files", Summary: "List the sandbox's files in object storage, also after it is destroyed", Response: api.StoredFiles{}}, Cred: httpx.CredAPIKey, Handler: h.files},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/storage/files/raw", Summary: "Download one of the sandbox's files from object storage (?path=, relative to /workspace), also after it is destroyed", Produces: "application/octet-stream", Query: []string{"path"}}, Cred: httpx.CredAPIKey, Handler: h.download},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/sandboxes/{id}/storage", Summary: "Delete the sandbox's files from object storage (a running sandbox is synced again from scratch)", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: h.delete},
	}
}
