package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server"
)

func TestParseMCPCatalog(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"", server.DefaultMCPCatalog(), false},
		{"gh=api.github.com, int=mcp.internal.example:8443", map[string]string{"gh": "api.github.com", "int": "mcp.internal.example:8443"}, false},
		{"gh", nil, true},
		{"=h", nil, true},
		{"x=*.example.com", nil, true},
		{"x=host:0", nil, true},
	} {
		got, err := parseMCPCatalog(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseMCPCatalog(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" && !tc.wantErr {
			t.Errorf("parseMCPCatalog(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
