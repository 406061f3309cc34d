package imagesapi

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the images API. On a server that keeps no images (not
// Served) every route answers 422 not_supported with a hint, not the
// 404 of a path that does not exist.
func (s *Service) Routes() []httpx.Route {
	routes := []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/images", Summary: "Build an image from a spec (queued: 202); an identical spec of the account answers its existing image (200). Servers that keep no images (the kube driver's) answer every /v1/images route 422 not_supported", Request: api.CreateImageRequest{}, Response: api.Image{}, Status: http.StatusAccepted, AlsoStatus: http.StatusOK}, Cred: httpx.CredAPIKey, Handler: s.buildImage},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/images/import", Summary: "Import an OCI image layout tar or a docker save archive (the body, streamed, at most 8 GiB: 413 past it); label names it. A failed import says why in failure_code and failure_hint, as a failed build does", Response: api.Image{}, Status: http.StatusAccepted, Query: []string{"label"}, Upload: true}, Cred: httpx.CredAPIKey, Handler: s.importImage},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/images/{id}/logs", Summary: "The build's log as text; follow=1 streams it until the build ends", Produces: "text/plain", Query: []string{"follow"}}, Cred: httpx.CredAPIKey, Handler: s.imageLogs},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/images/{id}/log", Summary: "A page of the build's audit log (its egress decisions and outcome), oldest first", Response: api.LogPage{}, Query: []string{"limit", "offset"}}, Cred: httpx.CredAPIKey, Handler: s.imageAuditLog},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/images", Summary: "List the account's images, newest first; limit=N (1..1000) answers one page and a Link rel=\"next\" header to the next (cursor=)", Response: []api.Image{}, Query: []string{"limit", "cursor"}}, Cred: httpx.CredAPIKey, Handler: s.listImages},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/images/{id}", Summary: "Get one image", Response: api.Image{}}, Cred: httpx.CredAPIKey, Handler: s.getImage},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/images/{id}", Summary: "Delete an image; 409 image_in_use while a sandbox boots from it or a snapshot needs it", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: s.deleteImage},
	}
	if !s.Served() {
		for i := range routes {
			routes[i].Handler = func(http.ResponseWriter, *http.Request) error { return errNoImages() }
		}
	}
	return routes
}

// Served reports whether the server keeps images (Routes then do their work).
func (s *Service) Served() bool { return s.d.Images != nil }
