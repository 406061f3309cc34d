package api

import "time"

// CodeMCPConnectionLabelTaken answers a create whose label the account uses.
const CodeMCPConnectionLabelTaken = "mcp_connection_label_taken"

// CreateMCPConnectionRequest is the body of POST /v1/mcp-connections.
type CreateMCPConnectionRequest struct {
	Label     string `json:"label"`      // 1..200 characters, printable (CheckLabel); sandboxes name the connection by it
	CatalogID string `json:"catalog_id"` // e.g. "github", "slack", "notion", "linear"
}

// MCPConnection is a named grant of egress to a catalog entry's host: a
// sandbox created with its label in mcp_connection_names may reach the
// host (port 443 unless the catalog says otherwise) through the proxy.
type MCPConnection struct {
	ID        string    `json:"id"`
	Label     string    `json:"label"`
	CatalogID string    `json:"catalog_id"`
	Host      string    `json:"host"`
	CreatedAt time.Time `json:"created_at"`
}
