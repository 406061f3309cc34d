// Package mcpconns serves MCP connections: named egress grants an account
// makes to hosts of the MCP catalog (routes.go), which a sandbox create
// names to open its egress to them (Grants).
package mcpconns
