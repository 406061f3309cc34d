package mcpconns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// createMCPConnection serves POST /v1/mcp-connections.
func (s *Service) createMCPConnection(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateMCPConnectionRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	if req.Label == "" || len(req.Label) > model.MaxLabelLen {
		return httpx.Invalid("label", fmt.Sprintf("label must be 1 to %d characters", model.MaxLabelLen), "")
	}
	if err := api.CheckLabel(req.Label); err != nil {
		return err
	}
	catalog := s.d.Catalog
	host, ok := catalog[req.CatalogID]
	if !ok {
		ids := make([]string, 0, len(catalog))
		for id := range catalog {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return httpx.Invalid("catalog_id", fmt.Sprintf("catalog_id %q is not in the catalog", req.CatalogID), fmt.Sprintf("use one of %v", ids))
	}
	c := &model.MCPConnection{ID: model.NewID(), AccountID: authz.Account(r.Context()).ID, Label: req.Label, CatalogID: req.CatalogID, Host: host, CreatedAt: s.d.Now()}
	err := s.d.Store.CreateMCPConnection(r.Context(), c)
	if errors.Is(err, model.ErrConflict) {
		return api.Errorf(http.StatusConflict, api.CodeMCPConnectionLabelTaken, "an MCP connection labelled %q exists", req.Label).
			WithHint("pick another label, or delete the old connection")
	}
	if err != nil {
		return fmt.Errorf("create mcp connection: %w", err)
	}
	httpx.WriteJSON(w, http.StatusCreated, c.ToAPI())
	return nil
}

func (s *Service) listMCPConnections(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.d.Store.MCPConnections(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list mcp connections: %w", err)
	}
	out := make([]api.MCPConnection, len(cs))
	for i, c := range cs {
		out[i] = c.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// getMCPConnection serves GET /v1/mcp-connections/{id}. An account has a
// handful of connections, so it looks through them rather than asking the
// store for a query of its own.
func (s *Service) getMCPConnection(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	cs, err := s.d.Store.MCPConnections(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list mcp connections: %w", err)
	}
	for _, c := range cs {
		if c.ID == id {
			httpx.WriteJSON(w, http.StatusOK, c.ToAPI())
			return nil
		}
	}
	return notFound(id)
}

func (s *Service) deleteMCPConnection(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := s.d.Store.DeleteMCPConnection(r.Context(), authz.Account(r.Context()).ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Grants resolves a create's mcp_connection_names (labels) to the
// egress they grant; an unknown name is 404 mcp_connection_not_found.
func (s *Service) Grants(ctx context.Context, acct *model.Account, names []string) (egress.Allowlist, error) {
	if len(names) == 0 {
		return nil, nil
	}
	cs, err := s.d.Store.MCPConnections(ctx, acct.ID)
	if err != nil {
		return nil, fmt.Errorf("load mcp connections: %w", err)
	}
	byLabel := map[string]*model.MCPConnection{}
	for _, c := range cs {
		byLabel[c.Label] = c
	}
	var allow egress.Allowlist
	for _, name := range names {
		c, ok := byLabel[name]
		if !ok {
			return nil, api.Errorf(http.StatusNotFound, api.CodeMCPConnectionNotFound, "MCP connection %q not found", name).
				WithHint("list them with `boxkite mcp-connections ls`")
		}
		g, err := egress.ParseGrant(c.Host)
		if err != nil {
			return nil, fmt.Errorf("mcp connection %s: %w", c.ID, err)
		}
		allow = append(allow, g)
	}
	return allow, nil
}

func notFound(id string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "MCP connection %s not found", id).
		WithHint("list them with `boxkite mcp-connections ls`")
}
