// Package hostedmcp serves the hosted MCP endpoint (/mcp/, Streamable
// HTTP): the tools of boxkite-mcp, each call made as the REST request the
// caller's key would make and served in-process by the control plane.
package hostedmcp
