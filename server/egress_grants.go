package server

import (
	"net/netip"
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

// EgressPermitLoopbackForTests is a Config.EgressPermitForTests that lets
// the proxy reach loopback servers a test starts. Never use it elsewhere.
func EgressPermitLoopbackForTests(a netip.Addr) bool { return a.Unmap().IsLoopback() }
