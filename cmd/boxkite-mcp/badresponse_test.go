package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBadResponseHintNamesSetting: when the server URL answers with a web
// page, the tools' hint names what the MCP user set (the environment
// variable it came from, the CLI's config), not the Go client's
// Client.BaseURL, which an MCP user never sees.
func TestBadResponseHintNamesSetting(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><body><div id=app></div></body></html>")
	}))
	defer site.Close()
	env := map[string]string{"BOXKITE_HOME": t.TempDir(), "BOXKITE_URL": site.URL, "BOXKITE_API_KEY": "bxk_live_x"}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, inR, outW, io.Discard)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "boxkite-test", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_sandboxes", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("list_sandboxes: protocol error: %v", err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	got := text.String()
	if !res.IsError || !strings.Contains(got, "answered 200 text/html, not boxkite's JSON") {
		t.Errorf("list_sandboxes = %q (error %v), want the bad_response error", got, res.IsError)
	}
	for _, want := range []string{"from env BOXKITE_URL", "BOXKITE_BASE_URL", "boxkite config show", "any proxy in between"} {
		if !strings.Contains(got, want) {
			t.Errorf("list_sandboxes = %q, want its hint to name %q", got, want)
		}
	}
	if strings.Contains(got, "Client.BaseURL") {
		t.Errorf("list_sandboxes = %q names the Go client's field", got)
	}
	cs.Close()
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
