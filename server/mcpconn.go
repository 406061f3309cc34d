package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// DefaultMCPCatalog is the MCP catalog of reference §3.7: catalog id →
// the host (host:port; port 443 when omitted) a connection grants.
func DefaultMCPCatalog() map[string]string {
	return map[string]string{
		"slack":  "mcp.slack.com",
		"notion": "mcp.notion.com",
		"linear": "mcp.linear.app",
		"github": "api.githubcopilot.com",
	}
}

func (s *Server) mcpCatalog() map[string]string {
	if s.cfg.MCPCatalog != nil {
		return s.cfg.MCPCatalog
	}
	return DefaultMCPCatalog()
}

// createMCPConnection serves POST /v1/mcp-connections.
func (s *Server) createMCPConnection(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateMCPConnectionRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	if req.Label == "" || len(req.Label) > maxLabelLen {
		return httpx.Invalid("label", fmt.Sprintf("label must be 1 to %d characters", maxLabelLen), "")
	}
	catalog := s.mcpCatalog()
	host, ok := catalog[req.CatalogID]
	if !ok {
		ids := make([]string, 0, len(catalog))
		for id := range catalog {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return httpx.Invalid("catalog_id", fmt.Sprintf("catalog_id %q is not in the catalog", req.CatalogID), fmt.Sprintf("use one of %v", ids))
	}
	c := &model.MCPConnection{ID: model.NewID(), AccountID: accountFrom(r.Context()).ID, Label: req.Label, CatalogID: req.CatalogID, Host: host, CreatedAt: s.now()}
	err := s.store.CreateMCPConnection(r.Context(), c)
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

func (s *Server) listMCPConnections(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.store.MCPConnections(r.Context(), accountFrom(r.Context()).ID)
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
func (s *Server) getMCPConnection(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	cs, err := s.store.MCPConnections(r.Context(), accountFrom(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list mcp connections: %w", err)
	}
	for _, c := range cs {
		if c.ID == id {
			httpx.WriteJSON(w, http.StatusOK, c.ToAPI())
			return nil
		}
	}
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "MCP connection %s not found", id).
		WithHint("list them with `boxkite mcp-connections ls`")
}

func (s *Server) deleteMCPConnection(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := s.store.DeleteMCPConnection(r.Context(), accountFrom(r.Context()).ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "MCP connection %s not found", id).
			WithHint("list them with `boxkite mcp-connections ls`")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// egressGrants resolves a create's mcp_connection_names (labels) to the
// egress they grant; an unknown name is 404 mcp_connection_not_found.
func (s *Server) egressGrants(ctx context.Context, acct *model.Account, names []string) (egress.Allowlist, error) {
	if len(names) == 0 {
		return nil, nil
	}
	cs, err := s.store.MCPConnections(ctx, acct.ID)
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

// egressHosts checks a create's egress_hosts: admin keys only (member
// keys are what agents hold, and egress is the operator's to give), each
// a host name, optionally with a port.
func egressHosts(key *model.APIKey, hosts []string) (egress.Allowlist, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	if key == nil || key.Role != model.RoleAdmin {
		return nil, api.Errorf(http.StatusForbidden, api.CodeForbidden, "only admin keys may grant egress_hosts").
			WithHint("use an admin API key, or grant a catalog host with an MCP connection")
	}
	if len(hosts) > api.MaxEgressHosts {
		return nil, httpx.Invalid("egress_hosts", fmt.Sprintf("egress_hosts has more than %d hosts", api.MaxEgressHosts), "")
	}
	var allow egress.Allowlist
	for _, h := range hosts {
		g, err := egress.ParseGrant(h)
		if err == nil && net.ParseIP(strings.TrimPrefix(g.Host, "*.")) != nil {
			err = errors.New("an IP address; the proxy lets names only through")
		}
		if err != nil {
			return nil, httpx.Invalid("egress_hosts", fmt.Sprintf("egress host %q is not a host name (%v)", h, err), `give "host" (port 443) or "host:port"`)
		}
		allow = append(allow, g)
	}
	return allow, nil
}

// egressServer returns the Spec.Egress of a sandbox granted allow: it
// serves the driver's listener with the proxy and audits every decision.
func (s *Server) egressServer(sb *model.Sandbox, allow egress.Allowlist) func(net.Listener) {
	if len(allow) == 0 {
		return nil
	}
	p := &egress.Proxy{
		Resolver: s.cfg.EgressResolver, Permit: s.cfg.EgressPermitForTests, Log: s.log,
		Admit: s.auditOpen, // decisions are audited: none while the log cannot be written
	}
	return func(l net.Listener) {
		go p.Serve(l, allow, func(d egress.Decision) {
			op, detail := "egress_deny", map[string]any{"host": d.Host, "port": d.Port, "reason": d.Reason}
			if d.Allowed {
				op = "egress_allow"
			}
			if d.Addr.IsValid() {
				detail["address"] = d.Addr.String()
			}
			// A failure keeps the entry waiting in the audit gate, which
			// then refuses further connections (Admit).
			_ = s.audit(context.Background(), audit.Record{Sandbox: sb, Operation: op, Detail: detail, Started: s.now()})
		})
	}
}

// EgressPermitLoopbackForTests is a Config.EgressPermitForTests that lets
// the proxy reach loopback servers a test starts. Never use it elsewhere.
func EgressPermitLoopbackForTests(a netip.Addr) bool { return a.Unmap().IsLoopback() }
