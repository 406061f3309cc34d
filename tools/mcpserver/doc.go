// Package mcpserver serves the MCP tools of package tools (tools.MCP, the 26
// tools of reference §5.1 plus the 5 of issue 22) with the official MCP Go SDK: over stdio in
// cmd/boxkite-mcp, where a *client.Client is the backend, and over
// Streamable HTTP at the control plane's /mcp/, where the server is.
//
// Tool results are text; a text starting with "Error" is marked IsError, so
// a failed call is a tool error the agent reads, never a protocol error.
package mcpserver
