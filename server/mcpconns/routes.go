package mcpconns

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the MCP connections routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/mcp-connections", Summary: "Create an MCP connection: a named egress grant to a catalog host", Request: api.CreateMCPConnectionRequest{}, Response: api.MCPConnection{}, Status: http.StatusCreated}, Cred: httpx.CredAPIKey, Handler: s.createMCPConnection},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/mcp-connections", Summary: "List the account's MCP connections, newest first", Response: []api.MCPConnection{}}, Cred: httpx.CredAPIKey, Handler: s.listMCPConnections},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/mcp-connections/{id}", Summary: "Get one MCP connection", Response: api.MCPConnection{}}, Cred: httpx.CredAPIKey, Handler: s.getMCPConnection},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/mcp-connections/{id}", Summary: "Delete an MCP connection (running sandboxes keep their grant)", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: s.deleteMCPConnection},
	}
}
