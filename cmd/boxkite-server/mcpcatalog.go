package main

import (
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/egress"
)

// parseMCPCatalog reads --mcp-catalog: comma-separated id=host[:port]
// entries that replace the default catalog; "" keeps the default.
func parseMCPCatalog(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return server.DefaultMCPCatalog(), nil
	}
	out := map[string]string{}
	for entry := range strings.SplitSeq(s, ",") {
		id, host, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("parse --mcp-catalog: %q is not id=host[:port]", entry)
		}
		if _, err := egress.ParseGrant(host); err != nil || strings.HasPrefix(host, "*") {
			return nil, fmt.Errorf("parse --mcp-catalog: %q is not a host[:port]", host)
		}
		out[id] = host
	}
	return out, nil
}
