package preview

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// RouteDeps is what the preview routes need of the control plane.
type RouteDeps struct {
	// LoadSandbox loads the request's {id} sandbox for its caller (an
	// *api.Error for one it may not see).
	LoadSandbox func(*http.Request) (*model.Sandbox, error)
	// ActiveAudited refuses an audited operation on a sandbox that is not
	// active or while the audit log takes no entries.
	ActiveAudited func(*model.Sandbox) error
}

// Routes lists the preview routes: creation, listing and revocation on
// /v1, and the path form /preview/…; the host-based form is matched
// before the mux (ServeHost). s is nil on a server whose store keeps no
// previews: the routes are documented, not served.
func (s *Service) Routes(d RouteDeps) []httpx.Route {
	h := &routes{s: s, d: d}
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/preview/{port}", Summary: "A preview URL of a port inside the sandbox, with a token valid ttl_seconds (30..86400, default 3600): host-based (url) and path form (path_url)", Request: api.CreatePreviewRequest{}, Response: api.Preview{}, Status: http.StatusCreated}, Cred: httpx.CredAPIKey, Handler: h.create},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/sandboxes/{id}/preview/{port}", Summary: "Revoke every live preview of the port: their URLs answer 401 at once", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: h.revoke},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/previews", Summary: "The sandbox's live previews (without tokens)", Response: []api.Preview{}}, Cred: httpx.CredAPIKey, Handler: h.list},
		{RouteDoc: httpx.RouteDoc{Pattern: PathPrefix + "{id}/{port}/{path...}", Summary: "A preview, path form (any method; WebSocket upgrades too): ?boxkite_preview_token= on the first visit is exchanged for an HttpOnly cookie; 401 preview_unauthorized without a valid one", Auth: httpx.AuthNone, Produces: "*/*"}, Cred: httpx.CredNone, Handler: s.servePathStreaming, OwnText: true}, // the app's query and headers, as they came
	}
}

type routes struct {
	s *Service
	d RouteDeps
}

// sandbox serves h for the request's sandbox, refused unless it is
// active and the audit log takes entries.
func (h *routes) sandbox(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request, string, string) error) error {
	sb, err := h.d.LoadSandbox(r)
	if err != nil {
		return err
	}
	if err := h.d.ActiveAudited(sb); err != nil {
		return err
	}
	return serve(w, r, sb.AccountID, sb.ID)
}

// create serves POST /v1/sandboxes/{id}/preview/{port}.
func (h *routes) create(w http.ResponseWriter, r *http.Request) error {
	return h.sandbox(w, r, h.s.ServeCreate)
}

// revoke serves DELETE /v1/sandboxes/{id}/preview/{port}.
func (h *routes) revoke(w http.ResponseWriter, r *http.Request) error {
	return h.sandbox(w, r, h.s.ServeRevoke)
}

// list serves GET /v1/sandboxes/{id}/previews.
func (h *routes) list(w http.ResponseWriter, r *http.Request) error {
	return h.sandbox(w, r, h.s.ServeList)
}

// servePathStreaming serves the path form, its body and answer streamed.
func (s *Service) servePathStreaming(w http.ResponseWriter, r *http.Request) error {
	apihttp.Streaming(r)
	return s.ServePath(w, r)
}

// ServeHost serves r if it is for a host-based preview, and reports
// whether it was. A nil s serves nothing.
func (s *Service) ServeHost(w http.ResponseWriter, r *http.Request) bool {
	if s == nil || !s.Matches(r) {
		return false
	}
	apihttp.Streaming(r)
	s.ServeHTTP(w, r)
	return true
}
