package volumes

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the volumes routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/volumes", Summary: "Create a persistent volume (size_gb default 1); ready at once; at most 10 per account (429 volume_limit_reached)", Request: api.CreateVolumeRequest{}, Response: api.Volume{}, Status: http.StatusCreated}, Cred: httpx.CredAPIKey, Handler: s.createVolume},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/volumes", Summary: "List the account's volumes, newest first", Response: []api.Volume{}}, Cred: httpx.CredAPIKey, Handler: s.listVolumes},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/volumes/{id}", Summary: "Get one volume", Response: api.Volume{}}, Cred: httpx.CredAPIKey, Handler: s.getVolume},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/volumes/{id}", Summary: "Delete a volume and its data; 409 volume_in_use while an active sandbox mounts it", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: s.deleteVolume},
	}
}
