package hostedmcp

import "github.com/boxkite/boxkite/server/internal/httpx"

// Routes lists the hosted MCP endpoint: every method of /mcp/, with an
// API key or, when the server runs its OAuth authorization server
// (server/oauth), an OAuth access token for /mcp/. JSON-RPC
// ids, not Idempotency-Key, name MCP requests, so its POSTs are streaming.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: Pattern}, Cred: httpx.CredMCP, Handler: s.handler(), Streaming: true},
	}
}
