package sandbox

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// MaxListLimit is the most sandboxes one page of GET /v1/sandboxes holds.
const MaxListLimit = api.MaxListLimit

// listSandboxes serves GET /v1/sandboxes: the reference's bare array,
// everything at once, unless the client asks for pages with limit. Then
// the answer holds at most limit sandboxes and, when there may be more,
// a Link header (RFC 8288, as GitHub's API and the registry API do) whose
// rel="next" target is this request with the cursor of the next page
// (under the server's public URL when one is configured, else a path):
// the body keeps the reference's shape either way.
func (s *Service) listSandboxes(w http.ResponseWriter, r *http.Request) error {
	p, err := listPage(r.URL.Query())
	if err != nil {
		return err
	}
	ask := p
	if p.Limit > 0 {
		ask.Limit = p.Limit + 1 // one more says whether a next page exists
	}
	sbs, err := s.store.ListSandboxPage(r.Context(), authz.Account(r.Context()).ID, ask)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	if p.Limit > 0 && len(sbs) > p.Limit {
		sbs = sbs[:p.Limit]
		last := sbs[len(sbs)-1]
		httpx.SetNextLink(w, r, s.cfg.PublicURL, last.CreatedAt, last.ID)
	}
	out := make([]api.Sandbox, len(sbs))
	for i, sb := range sbs {
		out[i] = s.apiSandbox(sb)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// listPage reads GET /v1/sandboxes's query: active_only, limit (1 to
// MaxListLimit; absent, no limit) and cursor (from a Link header).
func listPage(q url.Values) (model.SandboxPage, error) {
	var p model.SandboxPage
	if v := q.Get("active_only"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, &api.Error{
				Status: http.StatusUnprocessableEntity, Code: api.CodeValidation,
				Message: fmt.Sprintf("active_only %q is not a boolean", v), Hint: "use active_only=true or active_only=false",
				Details: []httpx.FieldError{{Loc: []string{"query", "active_only"}, Msg: "not a boolean", Type: "value_error"}},
			}
		}
		p.ActiveOnly = b
	}
	pg, err := httpx.ParsePage(q, "sandbox", 0, MaxListLimit)
	if err != nil {
		return p, err
	}
	p.Limit, p.AfterCreated, p.AfterID = pg.Limit, pg.AfterCreated, pg.AfterID
	return p, nil
}
