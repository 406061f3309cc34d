// Package envd serves E2B's in-sandbox daemon API for every boxkite
// sandbox on one listener: the process.Process and filesystem.Filesystem
// Connect services, the /files transfer routes and /health (port 49983 in
// E2B's terms), and the code interpreter's /execute and /contexts (port
// 49999). The E2B SDK, with E2B_SANDBOX_URL set, sends all of them to one
// origin and names the sandbox in the E2b-Sandbox-Id header and the port
// in E2b-Sandbox-Port; each request must carry that sandbox's access token.
//
// Every call becomes a call of the sandbox's sidecar through Session, as
// /v1 makes them, so the jail, the exec budget, the allowlist and the audit
// log are the same on every driver.
package envd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem/filesystemconnect"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process/processconnect"
	"github.com/boxkite/boxkite/server/internal/limits"
)

// Headers the E2B SDK routes and authenticates sandbox traffic with.
const (
	HeaderSandboxID    = "E2b-Sandbox-Id"
	HeaderSandboxPort  = "E2b-Sandbox-Port"
	HeaderAccessToken  = "X-Access-Token"
	HeaderTrafficToken = "E2B-Traffic-Access-Token"
)

// The ports E2B's SDKs address: envd and the code interpreter.
const (
	PortEnvd        = "49983"
	PortInterpreter = "49999"
)

// Version is the envd version advertised to the SDK (the create
// response's envdVersion), which switches SDK features on: 0.5.7 has the
// server choose the default user, allows closeStdin and octet-stream
// uploads; file metadata (0.6.2) and watch entries (0.6.3) are not served.
const Version = "0.5.7"

// Home is where commands start: the sandbox's workspace.
const Home = "/workspace"

// UserHome is E2B's home, where its relative paths point: in this API it
// names the workspace (Home) and everything below it, and answers keep
// the name the caller used (inSandbox, asAsked); in the sandbox it
// resolves there too (the jail's symlink, the pod's second mount), and it
// is the HOME of the commands started here, as envd's user's home.
const UserHome = "/home/user"

// UserName is the sandbox user's name (uid 1001 in the local driver's
// jail and in the kube driver's sidecar image), which every call runs as:
// the USER and LOGNAME of the commands started here, as envd gives its
// user's. The SDK's user option may name it, E2B's "user" or "root";
// another name is refused, as envd refuses a user it does not have
// (knownUser).
const UserName = "sandbox"

// knownUser reports whether name is a user the SDK may name: E2B's two
// and the sandbox's own. None changes who a call runs as (docs/e2b.md).
func knownUser(name string) bool {
	return name == "user" || name == "root" || name == UserName
}

// requestUser is the user r names, as the SDK sends it: the username of
// /files's query, or an RPC's Basic authorization.
func requestUser(r *http.Request) (string, bool) {
	if r.URL.Path == "/files" {
		q := r.URL.Query()
		return q.Get("username"), q.Get("username") != ""
	}
	name, _, ok := r.BasicAuth()
	return name, ok
}

// Options configure a Handler.
type Options struct {
	Sandboxes Sandboxes
	Tokens    *Tokens
	Log       *slog.Logger // nil means slog.Default()
	// KeepAliveMax bounds the interval between keepalive events on a
	// quiet stream, whatever the client's Keepalive-Ping-Interval says;
	// 0 means 30 s.
	KeepAliveMax time.Duration
	// SignedURLFailures is how many signed /files URLs one source (an
	// IPv4 address, an IPv6 /64) may present a minute that no running
	// sandbox signed, before the next are answered 429 unchecked; 0
	// means DefaultSignedURLFailures.
	SignedURLFailures int
}

// Handler serves envd for every sandbox. Build it with New.
type Handler struct {
	sandboxes     Sandboxes
	tokens        *Tokens
	log           *slog.Logger
	keepAliveMax  time.Duration
	procs         *procTable
	watchers      *watcherTable
	contexts      *contextTable
	envd          *http.ServeMux // port 49983
	interp        *http.ServeMux // port 49999
	now           func() time.Time
	signFails     *limits.RateLimiter // failed signed-URL checks by source
	signFailLimit int
}

// New returns a Handler; it does no I/O.
func New(opts Options) *Handler {
	h := &Handler{
		sandboxes: opts.Sandboxes, tokens: opts.Tokens, log: opts.Log, keepAliveMax: opts.KeepAliveMax,
		procs: newProcTable(), watchers: newWatcherTable(), contexts: newContextTable(),
		envd: http.NewServeMux(), interp: http.NewServeMux(), now: time.Now,
		signFails: limits.NewRateLimiter(), signFailLimit: cmp.Or(opts.SignedURLFailures, DefaultSignedURLFailures),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.keepAliveMax <= 0 {
		h.keepAliveMax = 30 * time.Second
	}
	opts2 := []connect.HandlerOption{connect.WithReadMaxBytes(maxRPCBody)}
	h.envd.Handle(processconnect.NewProcessHandler(processService{h}, opts2...))
	h.envd.Handle(filesystemconnect.NewFilesystemHandler(filesystemService{h}, opts2...))
	for _, rt := range h.httpRoutes() {
		mux := h.envd
		if rt.port == PortInterpreter {
			mux = h.interp
		}
		mux.HandleFunc(rt.pattern, rt.fn)
	}
	return h
}

// httpRoute is a plain HTTP route of one port.
type httpRoute struct {
	port, pattern string
	fn            http.HandlerFunc
}

// httpRoutes are the routes besides the Connect services.
func (h *Handler) httpRoutes() []httpRoute {
	return []httpRoute{
		{PortEnvd, "GET /health", health},
		{PortEnvd, "GET /files", h.download},
		{PortEnvd, "POST /files", h.upload},
		{PortInterpreter, "POST /execute", h.execute},
		{PortInterpreter, "GET /contexts", h.listContexts},
		{PortInterpreter, "POST /contexts", h.createContext},
		{PortInterpreter, "DELETE /contexts/{id}", h.removeContext},
		{PortInterpreter, "POST /contexts/{id}/restart", h.restartContext},
		{PortInterpreter, "GET /health", health},
	}
}

func health(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// Route is one route envd serves, for tests that must cover them all.
type Route struct {
	Port    string // what E2b-Sandbox-Port names
	Method  string
	Pattern string // a Connect procedure's path, or an http.ServeMux path pattern
	// Stream is set for a streaming RPC: its request is one Connect
	// envelope, sent as application/connect+json.
	Stream bool
	// RPC is set for a Connect procedure.
	RPC bool
}

// Routes lists every route of both ports: each RPC of the process and
// filesystem services, from their descriptors, and the HTTP routes.
func Routes() []Route {
	var out []Route
	for _, fd := range []protoreflect.FileDescriptor{process.File_process_process_proto, filesystem.File_filesystem_filesystem_proto} {
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				out = append(out, Route{
					Port: PortEnvd, Method: http.MethodPost, Pattern: "/" + string(svc.FullName()) + "/" + string(m.Name()),
					Stream: m.IsStreamingClient() || m.IsStreamingServer(), RPC: true,
				})
			}
		}
	}
	for _, rt := range (&Handler{}).httpRoutes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		out = append(out, Route{Port: rt.port, Method: method, Pattern: path})
	}
	return out
}

// maxRPCBody bounds a Connect request message (SendInput carries data).
const maxRPCBody = 16 << 20

// Matches reports whether r is E2B sandbox traffic: the control plane
// never sends E2b-Sandbox-Id. A signed /files URL (sandbox.uploadUrl(),
// downloadUrl(), for a browser) comes without it.
func Matches(r *http.Request) bool {
	return r.Header.Get(HeaderSandboxID) != "" || signedFiles(r)
}

// signedFiles reports whether r is a /files request by signed URL.
func signedFiles(r *http.Request) bool {
	return r.URL.Path == "/files" && r.URL.Query().Has("signature")
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) Session { return ctx.Value(sessionKey{}).(Session) }

// answered holds what is given back once a request's answer is written
// (ServeHTTP runs it when its route returns): Connect marshals and writes
// a unary RPC's response after the RPC's handler has returned, so a file
// operation's reservation of the held-output budget, which counts that
// answer too, lasts until then (untilAnswered), however slowly the client
// reads it. A route runs in ServeHTTP's goroutine: no lock.
type answered struct{ release []func() }

type answeredKey struct{}

// untilAnswered has release run once ctx's answer is written (ServeHTTP),
// or now when ctx is no request's. A handler defers it instead of release.
func untilAnswered(ctx context.Context, release func()) {
	if a, ok := ctx.Value(answeredKey{}).(*answered); ok {
		a.release = append(a.release, release)
		return
	}
	release()
}

func (a *answered) done() {
	for _, release := range a.release {
		release()
	}
}

// ServeHTTP checks the sandbox's token, opens the sandbox (502 when it is
// not running) and serves the route of its port.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, port := r.Header.Get(HeaderSandboxID), r.Header.Get(HeaderSandboxPort)
	mux := h.envd
	switch port {
	case PortEnvd, "":
	case PortInterpreter:
		mux = h.interp
	default:
		writeGone(w, id, fmt.Sprintf("nothing listens on port %s of sandbox %s", port, id))
		return
	}
	ctx := r.Context()
	var keyID string
	var ok bool
	var err error
	if id == "" && signedFiles(r) {
		if id, keyID, ok = h.signedURL(w, r); !ok {
			return
		}
		r.Header.Set(HeaderSandboxID, id)
	} else {
		keyID, ok, err = h.authorized(r, id, port)
	}
	if err != nil {
		h.log.ErrorContext(ctx, "derive envd token", "sandbox", id, "err", err)
		writeStatus(w, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	if !ok {
		writeStatus(w, http.StatusUnauthorized, "unauthenticated",
			"missing or invalid access token for sandbox "+id+": send the create response's envdAccessToken as X-Access-Token")
		return
	}
	if name, ok := requestUser(r); ok && mux == h.envd && !knownUser(name) {
		// envd's answers: its /files's, and its authn middleware's for an
		// RPC, in the RPC's protocol (a stream's error in its end message,
		// which the SDK shows; a bare 401 it shows as "HTTP 401").
		msg := "invalid username: '" + name + "' (boxkite runs every call as the sandbox user: leave user unset, or pass 'user' or 'root')"
		if r.URL.Path == "/files" {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": http.StatusUnauthorized, "message": msg})
		} else {
			_ = connect.NewErrorWriter().Write(w, r, connect.NewError(connect.CodeUnauthenticated, errors.New(msg)))
		}
		return
	}
	if r.Method == http.MethodPost && (r.URL.Path == "/files" || r.URL.Path == processconnect.ProcessStreamInputProcedure) {
		apihttp.Streaming(r) // as long as it keeps moving
	}
	sess, err := h.sandboxes.Open(ctx, id, keyID)
	if errors.Is(err, ErrGone) {
		writeGone(w, id, "")
		return
	}
	if errors.Is(err, ErrRevoked) {
		writeStatus(w, http.StatusUnauthorized, "unauthenticated",
			"the API key this access token was issued to is revoked: connect to the sandbox again with a valid key for a new token")
		return
	}
	if err != nil {
		h.log.ErrorContext(ctx, "open sandbox for envd", "sandbox", id, "err", err)
		writeStatus(w, http.StatusInternalServerError, "internal", "internal error")
		return
	}
	ctx, stop := sess.Revocable(ctx)
	defer stop()
	a := &answered{}
	defer a.done() // the answer is written, or the client gone, or a panic
	ctx = context.WithValue(context.WithValue(ctx, sessionKey{}, sess), answeredKey{}, a)
	mux.ServeHTTP(w, r.WithContext(ctx))
}

// authorized checks the token r carries for the sandbox and returns the
// API key it was issued to: X-Access-Token everywhere, and on the
// interpreter's port the traffic token too. (Signed URLs come without the
// sandbox's header: signer.)
func (h *Handler) authorized(r *http.Request, id, port string) (keyID string, ok bool, err error) {
	ctx := r.Context()
	if tok := r.Header.Get(HeaderAccessToken); tok != "" {
		if keyID, ok, err = h.tokens.verify(ctx, purposeAccess, id, tok); ok || err != nil {
			return keyID, ok, err
		}
	}
	if tok := r.Header.Get(HeaderTrafficToken); port == PortInterpreter && tok != "" {
		return h.tokens.verify(ctx, purposeTraffic, id, tok)
	}
	return "", false, nil
}

// writeGone answers traffic for a sandbox that is not running as E2B's
// proxy does: 502, which the SDK reads as "the sandbox has ended".
func writeGone(w http.ResponseWriter, id, msg string) {
	if msg == "" {
		msg = "sandbox " + id + " is not running"
	}
	writeJSON(w, http.StatusBadGateway, map[string]any{"code": http.StatusBadGateway, "message": msg})
}

// writeStatus answers with a JSON body that both of the SDK's clients
// read: Connect takes the string code, envd's REST client the message.
func writeStatus(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// keepAlive is the interval of keepalive events on a quiet stream: the
// client's Keepalive-Ping-Interval (seconds), at most keepAliveMax.
func (h *Handler) keepAlive(hdr http.Header) time.Duration {
	d := h.keepAliveMax
	if s, err := strconv.Atoi(hdr.Get("Keepalive-Ping-Interval")); err == nil && s > 0 {
		d = min(d, time.Duration(s)*time.Second)
	}
	return d
}

// absPath makes a path from the SDK absolute: relative ones are under
// UserHome, as envd resolves them against the user's home.
func absPath(p string) string {
	switch {
	case p == "" || p == "~":
		return UserHome
	case len(p) > 1 && p[:2] == "~/":
		return path.Join(UserHome, p[2:])
	case p[0] != '/':
		return path.Join(UserHome, p)
	}
	return path.Clean(p)
}

// inSandbox is where the absolute path p is in the sandbox: UserHome and
// everything below it are the workspace's. (A file call on /home/user
// was refused as outside the file roots; a command's cwd there too.)
func inSandbox(p string) string {
	if rest, ok := under(p, UserHome); ok {
		return Home + rest
	}
	return p
}

// asAsked writes the sandbox path p (an answer's) as the caller named
// the path it asked about: under UserHome when asked is, so that
// files.list('/home/user') lists /home/user/… paths.
func asAsked(asked, p string) string {
	if _, ok := under(asked, UserHome); !ok {
		return p
	}
	if rest, ok := under(p, Home); ok {
		return UserHome + rest
	}
	return p
}

// askedError is err, an error about the path asked (absolute, as the
// caller named it), with the sandbox's name of that path in its message
// written as asked: a read of /home/user/a.txt that is not there says
// File not found: /home/user/a.txt, not /workspace/a.txt, as envd names
// the path it was given.
func askedError(err error, asked string) error {
	e, ok := errors.AsType[*api.Error](err)
	if !ok || inSandbox(asked) == asked {
		return err
	}
	renamed := *e
	renamed.Message = strings.ReplaceAll(e.Message, inSandbox(asked), asked)
	return &renamed
}

// envdCwdError is the sidecar's refusal of a cwd that is not there as
// envd words it (invalid_argument "cwd '/home/user/x' does not exist"),
// which E2B SDK users match; any other error is as it was.
func envdCwdError(err error) error {
	e, ok := errors.AsType[*api.Error](err)
	if !ok {
		return err
	}
	if p, ok := strings.CutPrefix(e.Message, "cwd does not exist: "); ok {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("cwd '%s' does not exist", p))
	}
	return err
}

// under reports whether p is dir or below it, and what follows dir.
func under(p, dir string) (rest string, ok bool) {
	if p == dir {
		return "", true
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir):], true
	}
	return "", false
}

// rpcError turns an error of the sandbox's session into a Connect error:
// an *api.Error keeps its message under the matching code; anything else
// is logged and becomes a bare internal error.
func (h *Handler) rpcError(ctx context.Context, err error) error {
	if errors.Is(err, ErrGone) {
		return connect.NewError(connect.CodeUnavailable, errors.New("the sandbox is not running"))
	}
	if ce := new(connect.Error); errors.As(err, &ce) {
		return ce
	}
	e, ok := errors.AsType[*api.Error](err)
	if !ok {
		h.log.ErrorContext(ctx, "envd call failed", "err", err)
		return connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	return connect.NewError(connectCode(e), errors.New(Message(e)))
}

// connectCode maps a boxkite error to the Connect code the SDK turns into
// the matching error class.
func connectCode(e *api.Error) connect.Code {
	status := e.Status
	if status == 0 {
		status = api.StatusOf(e.Code)
	}
	switch {
	case e.Code == api.CodeSandboxLost:
		return connect.CodeUnavailable
	case status == http.StatusNotFound:
		return connect.CodeNotFound
	case status == http.StatusConflict:
		return connect.CodeFailedPrecondition
	case status == http.StatusUnauthorized:
		return connect.CodeUnauthenticated
	case status == http.StatusForbidden:
		return connect.CodePermissionDenied
	case status == http.StatusTooManyRequests:
		return connect.CodeResourceExhausted
	case status == http.StatusRequestEntityTooLarge, status == http.StatusInsufficientStorage:
		return connect.CodeResourceExhausted
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		return connect.CodeInvalidArgument
	case status == http.StatusGatewayTimeout, status == http.StatusRequestTimeout:
		return connect.CodeDeadlineExceeded
	case status == http.StatusBadGateway, status == http.StatusServiceUnavailable:
		return connect.CodeUnavailable
	}
	return connect.CodeInternal
}

// RouteHandler is a route with the function that serves it, for the
// route list (docs/routes.md), which is tested against the muxes.
type RouteHandler struct {
	Port    string // envd's routes: the E2b-Sandbox-Port they answer on; "" for the control plane's
	Pattern string // "METHOD /path"; an RPC's path is its procedure's
	Func    any    // the function that serves it: a handler, or an RPC's method
	// MuxPattern is the pattern its mux registers it under (an RPC's:
	// its service's prefix); Served returns the one the mux serves r with.
	MuxPattern string
	Served     func(r *http.Request) string
}

// RouteHandlers lists every route of both ports with its handler.
func (h *Handler) RouteHandlers() []RouteHandler {
	services := map[string]reflect.Type{
		"/process.Process/":       reflect.TypeFor[processService](),
		"/filesystem.Filesystem/": reflect.TypeFor[filesystemService](),
	}
	fns := map[string]any{}
	for _, rt := range h.httpRoutes() {
		fns[rt.port+" "+rt.pattern] = rt.fn
	}
	var out []RouteHandler
	for _, rt := range Routes() {
		mux := h.envd
		if rt.Port == PortInterpreter {
			mux = h.interp
		}
		rh := RouteHandler{
			Port: rt.Port, Pattern: rt.Method + " " + rt.Pattern, MuxPattern: rt.Method + " " + rt.Pattern,
			Served: func(r *http.Request) string { _, p := mux.Handler(r); return p },
		}
		if rt.RPC {
			i := strings.LastIndex(rt.Pattern, "/")
			rh.MuxPattern = rt.Pattern[:i+1]
			if m, ok := services[rh.MuxPattern].MethodByName(rt.Pattern[i+1:]); ok {
				rh.Func = m.Func.Interface()
			}
		} else {
			rh.Func = fns[rt.Port+" "+rh.Pattern]
		}
		out = append(out, rh)
	}
	return out
}
