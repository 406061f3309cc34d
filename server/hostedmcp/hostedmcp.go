package hostedmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/tools"
	"github.com/boxkite/boxkite/tools/mcpserver"
)

// Pattern is the hosted MCP endpoint (Streamable HTTP), authenticated by
// API key like the REST API, or by an MCP OAuth access token.
const Pattern = "/mcp/"

// handler serves /mcp/: the tools of boxkite-mcp, served in-process.
// ?enable=NAME,… adds opt-in tools (tools.Optional), e.g. http_request.
func (s *Service) handler() httpx.Handler {
	var mu sync.Mutex
	servers := map[string]*mcp.Server{} // by the sorted names enabled; at most 2^len(tools.Optional())
	h := mcpserver.HTTPHandlerFor(func(r *http.Request) *mcp.Server {
		names := enabled(r)
		key := strings.Join(names, ",")
		mu.Lock()
		defer mu.Unlock()
		if srv, ok := servers[key]; ok {
			return srv
		}
		opt, _ := tools.Enabled(names) // checked by the route
		srv := mcpserver.New(s.d.Version, s.backend, opt...)
		servers[key] = srv
		return srv
	})
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := tools.Enabled(enabled(r)); err != nil {
			return &api.Error{
				Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: "enable: " + err.Error(),
				Hint:    "name opt-in tools in ?enable=, comma-separated",
				Details: []httpx.FieldError{{Loc: []string{"query", "enable"}, Msg: err.Error(), Type: "value_error"}},
			}
		}
		h.ServeHTTP(w, r)
		return nil
	}
}

// enabled returns the opt-in tools ?enable= names, sorted, each once.
func enabled(r *http.Request) []string {
	var names []string
	for _, v := range r.URL.Query()["enable"] {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// backend serves one tool call as the caller of its HTTP request: every
// tool becomes the REST request the same key would make, run through
// the server's ServeHTTP in-process, so authentication, the allowlist, rate limits,
// quotas and the audit log apply exactly as they do to the API.
func (s *Service) backend(_ context.Context, req *mcp.CallToolRequest) (tools.Provider, tools.Binder, error) {
	var auth string
	if req.Extra != nil && req.Extra.Header != nil {
		auth = req.Extra.Header.Get("Authorization")
	}
	if auth == "" {
		// The route's guard let the request in, so this only happens if the
		// SDK stops passing headers on; refuse rather than act as nobody.
		return nil, nil, errors.New("the request carried no credentials")
	}
	p := &inProcess{serve: s.d.Serve, auth: auth}
	return p, func(id string) tools.Sandbox { return &inProcessSandbox{p: p, id: id} }, nil
}

// inProcessKey marks the context of a tool call's in-process request.
type inProcessKey struct{}

// InProcess reports whether ctx is that of a tool call's in-process
// request: the guard then accepts the MCP OAuth access token /mcp/ was
// called with where an API key is taken. A request from the network never
// carries the mark.
func InProcess(ctx context.Context) bool {
	v, _ := ctx.Value(inProcessKey{}).(bool)
	return v
}

// inProcess calls this server's own API as one caller, without a network.
type inProcess struct {
	serve http.Handler // the control plane
	auth  string       // the caller's Authorization header
}

// do makes one API call: body (if not nil) as JSON, the answer decoded into
// out (if not nil); an error status comes back as its *api.Error.
func (p *inProcess) do(ctx context.Context, method, path string, body, out any) error {
	return p.doHeader(ctx, method, path, body, out, nil)
}

// doHeader is do, copying the answer's headers into header when not nil.
func (p *inProcess) doHeader(ctx context.Context, method, path string, body, out any, header http.Header) error {
	status, answer, err := apihttp.ServeInProcess(context.WithValue(ctx, inProcessKey{}, true), p.serve, apihttp.InProcessCall{
		Method: method, Path: path, Body: body, Auth: p.auth,
		RemoteAddr: "127.0.0.1:0", // in-process: no client address of its own
		Header:     header,
	})
	if err != nil {
		return err
	}
	if status >= 300 {
		if e := apihttp.AnswerError(status, answer); e != nil {
			return e
		}
		return &api.Error{Status: status, Code: api.CodeInternal, Message: fmt.Sprintf("%s %s answered %d", method, path, status)}
	}
	if out == nil || len(answer) == 0 {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

// get is do for a GET returning T.
func get[T any](ctx context.Context, p *inProcess, path string) (*T, error) {
	var v T
	if err := p.do(ctx, http.MethodGet, path, nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// post is do for a POST returning T.
func post[T any](ctx context.Context, p *inProcess, path string, body any) (*T, error) {
	var v T
	if err := p.do(ctx, http.MethodPost, path, body, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func deref[T any](v *T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return *v, nil
}

func (p *inProcess) CreateSandboxes(ctx context.Context, req api.CreateSandboxRequest) ([]api.Sandbox, error) {
	raw, err := post[json.RawMessage](ctx, p, "/v1/sandboxes", req)
	if err != nil {
		return nil, err
	}
	if b := bytes.TrimLeft(*raw, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		var sbs []api.Sandbox
		return sbs, json.Unmarshal(b, &sbs)
	}
	var sb api.Sandbox
	if err := json.Unmarshal(*raw, &sb); err != nil {
		return nil, fmt.Errorf("decode created sandbox: %w", err)
	}
	return []api.Sandbox{sb}, nil
}

func (p *inProcess) Sandbox(ctx context.Context, id string) (*api.Sandbox, error) {
	return get[api.Sandbox](ctx, p, "/v1/sandboxes/"+url.PathEscape(id))
}

func (p *inProcess) ListSandboxesPage(ctx context.Context, activeOnly bool, limit int, cursor string) ([]api.Sandbox, string, error) {
	q := url.Values{"active_only": {strconv.FormatBool(activeOnly)}, "limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var sbs []api.Sandbox
	h := http.Header{}
	if err := p.doHeader(ctx, http.MethodGet, "/v1/sandboxes?"+q.Encode(), nil, &sbs, h); err != nil {
		return nil, "", err
	}
	return sbs, api.NextCursor(h), nil
}

func (p *inProcess) DeleteSandbox(ctx context.Context, id string) error {
	return p.do(ctx, http.MethodDelete, "/v1/sandboxes/"+url.PathEscape(id), nil, nil)
}

func (p *inProcess) CreateImage(ctx context.Context, req api.CreateImageRequest) (*api.Image, error) {
	return post[api.Image](ctx, p, "/v1/images", req)
}

func (p *inProcess) GetImage(ctx context.Context, id string) (*api.Image, error) {
	return get[api.Image](ctx, p, "/v1/images/"+url.PathEscape(id))
}

func (p *inProcess) ListImagesPage(ctx context.Context, limit int, cursor string) ([]api.Image, string, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var imgs []api.Image
	h := http.Header{}
	if err := p.doHeader(ctx, http.MethodGet, "/v1/images?"+q.Encode(), nil, &imgs, h); err != nil {
		return nil, "", err
	}
	return imgs, api.NextCursor(h), nil
}

func (p *inProcess) DeleteImage(ctx context.Context, id string) error {
	return p.do(ctx, http.MethodDelete, "/v1/images/"+url.PathEscape(id), nil, nil)
}

func (p *inProcess) CreateVolume(ctx context.Context, req api.CreateVolumeRequest) (*api.Volume, error) {
	return post[api.Volume](ctx, p, "/v1/volumes", req)
}

func (p *inProcess) GetVolume(ctx context.Context, id string) (*api.Volume, error) {
	return get[api.Volume](ctx, p, "/v1/volumes/"+url.PathEscape(id))
}

func (p *inProcess) ListVolumes(ctx context.Context) ([]api.Volume, error) {
	return deref(get[[]api.Volume](ctx, p, "/v1/volumes"))
}

func (p *inProcess) DeleteVolume(ctx context.Context, id string) error {
	return p.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(id), nil, nil)
}

func (p *inProcess) CreateMCPConnection(ctx context.Context, req api.CreateMCPConnectionRequest) (*api.MCPConnection, error) {
	return post[api.MCPConnection](ctx, p, "/v1/mcp-connections", req)
}

func (p *inProcess) ListMCPConnections(ctx context.Context) ([]api.MCPConnection, error) {
	return deref(get[[]api.MCPConnection](ctx, p, "/v1/mcp-connections"))
}

func (p *inProcess) DeleteMCPConnection(ctx context.Context, id string) error {
	return p.do(ctx, http.MethodDelete, "/v1/mcp-connections/"+url.PathEscape(id), nil, nil)
}

// inProcessSandbox is tools.Sandbox (and tools.LanguageServers) over the
// sandbox routes of one sandbox.
type inProcessSandbox struct {
	p  *inProcess
	id string
}

func (b *inProcessSandbox) path(rest string) string {
	return "/v1/sandboxes/" + url.PathEscape(b.id) + rest
}

func (b *inProcessSandbox) NodeInterpreterExec(ctx context.Context, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	return post[api.InterpreterExecResult](ctx, b.p, b.path("/node-interpreter/exec"), req)
}

func (b *inProcessSandbox) PTYExec(ctx context.Context, req api.PTYExecRequest) (*api.PTYExecResult, error) {
	return post[api.PTYExecResult](ctx, b.p, b.path("/pty-exec"), req)
}

func (b *inProcessSandbox) Browser(ctx context.Context, action string, req, out any) error {
	return b.p.do(ctx, http.MethodPost, b.path("/browser/"+action), req, out)
}

func (b *inProcessSandbox) HTTPRequest(ctx context.Context, req api.HTTPRequest) (*api.HTTPResponse, error) {
	return post[api.HTTPResponse](ctx, b.p, b.path("/http-request"), req)
}

func (b *inProcessSandbox) Exec(ctx context.Context, req api.ExecRequest) (*api.ExecResult, error) {
	return post[api.ExecResult](ctx, b.p, b.path("/exec"), req)
}

func (b *inProcessSandbox) WriteFile(ctx context.Context, req api.FileCreateRequest) (*api.FileCreateResult, error) {
	return post[api.FileCreateResult](ctx, b.p, b.path("/files"), req)
}

func (b *inProcessSandbox) View(ctx context.Context, req api.ViewRequest) (*api.ViewResult, error) {
	return post[api.ViewResult](ctx, b.p, b.path("/files/view"), req)
}

func (b *inProcessSandbox) StrReplace(ctx context.Context, req api.StrReplaceRequest) (*api.StrReplaceResult, error) {
	return post[api.StrReplaceResult](ctx, b.p, b.path("/files/str-replace"), req)
}

func (b *inProcessSandbox) List(ctx context.Context, req api.LsRequest) (*api.LsResult, error) {
	return post[api.LsResult](ctx, b.p, b.path("/files/ls"), req)
}

func (b *inProcessSandbox) Glob(ctx context.Context, req api.GlobRequest) (*api.GlobResult, error) {
	return post[api.GlobResult](ctx, b.p, b.path("/files/glob"), req)
}

func (b *inProcessSandbox) Grep(ctx context.Context, req api.GrepRequest) (*api.GrepResult, error) {
	return post[api.GrepResult](ctx, b.p, b.path("/files/grep"), req)
}

func (b *inProcessSandbox) Watch(ctx context.Context, req api.WatchRequest) (*api.WatchResult, error) {
	return post[api.WatchResult](ctx, b.p, b.path("/files/watch"), req)
}

func (b *inProcessSandbox) LSPStart(ctx context.Context, req api.LSPStartRequest) (*api.LSPStarted, error) {
	return post[api.LSPStarted](ctx, b.p, b.path("/lsp/start"), req)
}

func (b *inProcessSandbox) LSPOpen(ctx context.Context, id string, req api.LSPOpenRequest) error {
	return b.p.do(ctx, http.MethodPost, b.path("/lsp/"+url.PathEscape(id)+"/open"), req, nil)
}

func (b *inProcessSandbox) LSPCompletion(ctx context.Context, id string, req api.LSPCompletionRequest) (*api.LSPCompletionResult, error) {
	return post[api.LSPCompletionResult](ctx, b.p, b.path("/lsp/"+url.PathEscape(id)+"/completion"), req)
}

func (b *inProcessSandbox) LSPStop(ctx context.Context, id string) error {
	return b.p.do(ctx, http.MethodPost, b.path("/lsp/"+url.PathEscape(id)+"/stop"), nil, nil)
}

func (p *inProcess) PauseSandbox(ctx context.Context, id, mode string) (*api.Sandbox, error) {
	return post[api.Sandbox](ctx, p, "/v1/sandboxes/"+url.PathEscape(id)+"/pause", api.PauseSandboxRequest{Mode: mode})
}

func (p *inProcess) ResumeSandbox(ctx context.Context, id string) (*api.ResumeResult, error) {
	return post[api.ResumeResult](ctx, p, "/v1/sandboxes/"+url.PathEscape(id)+"/resume", struct{}{})
}

func (p *inProcess) CreateSnapshot(ctx context.Context, sandboxID, label string) (*api.Snapshot, error) {
	return post[api.Snapshot](ctx, p, "/v1/sandboxes/"+url.PathEscape(sandboxID)+"/snapshots", api.CreateSnapshotRequest{Label: label})
}

func (p *inProcess) RestoreSnapshot(ctx context.Context, id, label string) (*api.Sandbox, error) {
	return post[api.Sandbox](ctx, p, "/v1/snapshots/"+url.PathEscape(id)+"/restore", api.RestoreSnapshotRequest{Label: label})
}

func (p *inProcess) ForkSandbox(ctx context.Context, id string, count int) ([]api.Sandbox, error) {
	return deref(post[[]api.Sandbox](ctx, p, "/v1/sandboxes/"+url.PathEscape(id)+"/fork", api.ForkSandboxRequest{Count: count}))
}
