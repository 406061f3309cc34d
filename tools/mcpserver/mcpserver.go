package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/boxkite/boxkite/tools"
)

// Name is the server name announced to clients.
const Name = "boxkite"

// Backend gives the provider and sandbox binder that serve one tool call.
// The stdio server has one for its whole life (Static); the control plane
// makes one per call for the caller's API key. An error is shown to the
// agent as the tool's error text.
type Backend func(ctx context.Context, req *mcp.CallToolRequest) (tools.Provider, tools.Binder, error)

// Static is the Backend that always answers with p and bind.
func Static(p tools.Provider, bind tools.Binder) Backend {
	return func(context.Context, *mcp.CallToolRequest) (tools.Provider, tools.Binder, error) {
		return p, bind, nil
	}
}

// New returns an MCP server named boxkite with the tools of tools.MCP,
// the opt-in tools given included (tools.Enabled), each call served by
// backend.
func New(version string, backend Backend, optional ...tools.Tool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "boxkite sandboxes", Version: version}, nil)
	for _, t := range tools.MCP(nil, nil, optional...) {
		s.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Schema}, handler(t.Name, backend, optional))
	}
	return s
}

func handler(name string, backend Backend, optional []tools.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, bind, err := backend(ctx, req)
		if err != nil {
			return Result(fmt.Sprintf("Error: %v", err)), nil
		}
		var args []byte
		if req.Params != nil {
			args = req.Params.Arguments
		}
		return Result(tools.Call(ctx, tools.MCP(p, bind, optional...), nil, name, args)), nil
	}
}

// Result is the MCP result for a tool's text: an error text is a tool
// error (IsError), which clients show to the model instead of failing;
// an image's data URL (tools.ImagePrefix) is image content.
func Result(text string) *mcp.CallToolResult {
	if mime, data, ok := tools.ImageOf(text); ok {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: data, MIMEType: mime}}}
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		IsError: strings.HasPrefix(text, "Error"),
	}
}

// HTTPHandler serves s over Streamable HTTP, stateless: each POST carries
// its own credentials and any replica can answer it, so there are no
// sessions to pin (GET and DELETE answer 405, which clients expect).
func HTTPHandler(s *mcp.Server) http.Handler {
	return HTTPHandlerFor(func(*http.Request) *mcp.Server { return s })
}

// HTTPHandlerFor is HTTPHandler with the server picked per request (the
// control plane picks by the opt-in tools a request enables).
func HTTPHandlerFor(pick func(*http.Request) *mcp.Server) http.Handler {
	return parseErrors(mcp.NewStreamableHTTPHandler(pick, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The SDK refuses a non-loopback Host on a loopback listener to stop
		// DNS rebinding. Every request here needs an API key, which a
		// rebinding page cannot send, and behind a reverse proxy on the same
		// host the Host header is the public name: the check would refuse
		// every legitimate call.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        maxBody,
	}))
}

// maxBody is the largest JSON-RPC message a POST may carry.
const maxBody = 16 << 20

// parseErrors answers a JSON POST whose body is not JSON (or is empty)
// with JSON-RPC's parse error (-32700, id null) and status 400, as the
// MCP transport says a server should, instead of the SDK's plain-text
// "malformed payload". Any other request goes on to next untouched: the
// SDK still answers a wrong method (405) or Content-Type (415), and a
// body over the limit (413).
func parseErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if r.Method != http.MethodPost || mt != "application/json" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err == nil && len(body) <= maxBody && !json.Valid(body) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg := "Parse error: the body is not JSON"
			if len(bytes.TrimSpace(body)) == 0 {
				msg = "Parse error: the body is empty"
			}
			_ = json.NewEncoder(w).Encode(map[string]any{
				"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": -32700, "message": msg},
			})
			return
		}
		// Hand the bytes read on, followed by the rest (and any read error).
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), errReader{err}, r.Body), r.Body}
		next.ServeHTTP(w, r)
	})
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (rc readCloser) Close() error { return rc.c.Close() }

// errReader returns err once read, or EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
