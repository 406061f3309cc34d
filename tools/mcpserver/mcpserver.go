package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"

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
		ctx, stop := callContext(ctx)
		defer stop()
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
	return parseErrors(&inFlight{}, mcp.NewStreamableHTTPHandler(pick, &mcp.StreamableHTTPOptions{
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
// "malformed payload". A JSON body goes on to calls (inFlight.track).
// Any other request goes on to next untouched: the SDK still answers a
// wrong method (405) or Content-Type (415), and a body over the limit
// (413).
func parseErrors(calls *inFlight, next http.Handler) http.Handler {
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
		if err == nil && len(body) <= maxBody {
			var stop func()
			r, stop = calls.track(r, body)
			defer stop()
		}
		next.ServeHTTP(w, r)
	})
}

// inFlight lets a stateless endpoint honour notifications/cancelled. The
// notification comes in a POST of its own, which the SDK serves in a new
// session that knows nothing of the call; and in protocols before
// 2026-07-28 the SDK does not end a call's handler when its POST's client
// goes away either. So each tools/call POST is recorded here under its
// caller's Authorization header and JSON-RPC id, and its handler
// (callContext) ends when that POST's client leaves or when a cancellation
// naming the id comes with the same header. Ids are only unique per
// client: when two calls of one header share an id (two clients with one
// key), a cancellation of it is ignored, as MCP allows, rather than guessed.
// It works within one replica: a cancellation that reaches another is
// ignored too.
type inFlight struct {
	mu    sync.Mutex
	calls map[callKey][]*inFlightCall
}

type callKey struct {
	auth [sha256.Size]byte // of the Authorization header: no secret is kept
	id   string            // the JSON-RPC id, as JSON
}

type inFlightCall struct{ cancel context.CancelFunc }

// callCtxKey is the context key under which track hands a tool call's
// context to callContext.
type callCtxKey struct{}

// track looks at the JSON-RPC message in body: a tools/call is recorded
// until stop, with a context that ends as described at inFlight, and r
// carries that context for callContext; a notifications/cancelled cancels
// the call it names, if it is this caller's and unambiguous.
func (f *inFlight) track(r *http.Request, body []byte) (*http.Request, func()) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil { // a batch, or not an object
		return r, func() {}
	}
	auth := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	switch {
	case msg.Method == "tools/call" && len(msg.ID) > 0 && string(msg.ID) != "null":
		k := callKey{auth, canonicalID(msg.ID)}
		ctx, cancel := context.WithCancel(r.Context())
		c := &inFlightCall{cancel}
		f.mu.Lock()
		if f.calls == nil {
			f.calls = map[callKey][]*inFlightCall{}
		}
		f.calls[k] = append(f.calls[k], c)
		f.mu.Unlock()
		return r.WithContext(context.WithValue(r.Context(), callCtxKey{}, ctx)), func() {
			f.mu.Lock()
			if rest := slices.DeleteFunc(f.calls[k], func(o *inFlightCall) bool { return o == c }); len(rest) > 0 {
				f.calls[k] = rest
			} else {
				delete(f.calls, k)
			}
			f.mu.Unlock()
			cancel()
		}
	case msg.Method == "notifications/cancelled" && len(msg.Params.RequestID) > 0:
		k := callKey{auth, canonicalID(msg.Params.RequestID)}
		f.mu.Lock()
		if cs := f.calls[k]; len(cs) == 1 {
			cs[0].cancel()
		}
		f.mu.Unlock()
	}
	return r, func() {}
}

// canonicalID is a JSON-RPC id as JSON, the same for 7, 7.0 and 7e0.
func canonicalID(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// callContext is ctx, a tool call's handler's, ended as well when the call
// track recorded for its POST ends; stop releases it. Elsewhere (stdio,
// in memory) it is ctx: the SDK's own session cancels those calls.
func callContext(ctx context.Context) (context.Context, func()) {
	call, ok := ctx.Value(callCtxKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(call, cancel)
	return ctx, func() { stop(); cancel() }
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
