// Package e2b makes boxkite speak E2B: the control-plane REST routes the
// E2B SDKs call (create, list, get, kill, timeout, connect, pause, metrics,
// network, health) in E2B's JSON shapes and status codes, and, through
// package envd, the in-sandbox API on the same listener. E2B API keys are
// boxkite API keys (X-API-Key, or Authorization: Bearer); every call goes
// to the control plane through ControlPlane, so tenancy, quotas, the
// allowlist and the audit log are those of /v1. docs/e2b.md maps the two
// APIs onto each other.
package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/internal/ctxsleep"
	"github.com/boxkite/boxkite/server/e2b/envd"
	"github.com/boxkite/boxkite/server/model"
)

// Handler serves the E2B control plane and, for requests naming a sandbox
// (E2b-Sandbox-Id), envd. Build it with New.
type Handler struct {
	cp     ControlPlane
	store  Store
	tokens *envd.Tokens
	envd   *envd.Handler
	log    *slog.Logger
	mux    *http.ServeMux
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error // ctxsleep.Sleep but in tests
	cpu    cpuSamples                                 // getMetrics' last reading per sandbox
}

// New returns a Handler serving cp's sandboxes, keeping E2B's records in
// store. log nil means slog.Default().
func New(cp ControlPlane, store Store, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	store = authorized{store} // every call authorized against the request's caller
	tokens := envd.NewTokens(cp.TokenKey)
	h := &Handler{
		cp: cp, store: store, tokens: tokens, log: log, mux: http.NewServeMux(), now: time.Now, sleep: ctxsleep.Sleep,
		envd: envd.New(envd.Options{Sandboxes: sessions{cp, store}, Tokens: tokens, Log: log}),
	}
	h.routes()
	return h
}

func (h *Handler) routes() {
	for _, rt := range h.routeTable() {
		h.handle(rt.pattern, rt.fn)
	}
}

type route struct {
	pattern string
	fn      func(http.ResponseWriter, *http.Request, Caller) error
}

// routeTable is every control-plane route. Paths of features not mapped
// yet are whole subtrees, answered "not supported".
func (h *Handler) routeTable() []route {
	rts := []route{
		{"POST /sandboxes", h.create},
		{"POST /v2/sandboxes", h.create},
		{"GET /sandboxes", h.list},
		{"GET /v2/sandboxes", h.list},
		{"GET /sandboxes/{id}", h.get},
		{"DELETE /sandboxes/{id}", h.kill},
		{"POST /sandboxes/{id}/timeout", h.setTimeout},
		{"POST /sandboxes/{id}/refreshes", h.refresh},
		{"POST /v2/sandboxes/{id}/connect", h.connect},
		{"POST /sandboxes/{id}/connect", h.connect},
		{"POST /sandboxes/{id}/resume", h.connect},
		{"POST /sandboxes/{id}/pause", h.pause},
		{"GET /sandboxes/{id}/metrics", h.metrics},
		{"PUT /sandboxes/{id}/network", h.network},
		{"POST /sandboxes/{id}/snapshots", h.createSnapshot},
		{"POST /sandboxes/{id}/fork", h.fork},
		{"GET /snapshots", h.listSnapshots},
		{"DELETE /templates/{id}", h.deleteTemplate},
	}
	for _, p := range []string{"/volumes", "/volumes/", "/volumecontent/", "/secrets", "/secrets/", "/templates", "/templates/", "/v2/templates/", "/v3/templates"} {
		unversioned := strings.TrimPrefix(strings.TrimPrefix(p, "/v2"), "/v3")
		rts = append(rts, route{p, h.notSupported(strings.Trim(strings.SplitN(unversioned, "/", 3)[1], "/"))})
	}
	return rts
}

// Routes lists the control plane's route patterns (http.ServeMux's), for
// tests that must cover every one.
func Routes() []string {
	var out []string
	for _, rt := range (&Handler{}).routeTable() {
		out = append(out, rt.pattern)
	}
	return out
}

// RouteHandlers lists every route of the E2B-compatible API with its
// handler: the control plane's, then envd's (docs/routes.md).
func (h *Handler) RouteHandlers() []envd.RouteHandler {
	var out []envd.RouteHandler
	for _, rt := range h.routeTable() {
		out = append(out, envd.RouteHandler{
			Pattern: rt.pattern, MuxPattern: rt.pattern, Func: rt.fn,
			Served: func(r *http.Request) string { _, p := h.mux.Handler(r); return p },
		})
	}
	return append(out, h.envd.RouteHandlers()...)
}

// Matches reports whether r is for this handler: sandbox traffic, or a
// path of E2B's control plane (none of which /v1 uses).
func Matches(r *http.Request) bool {
	if envd.Matches(r) {
		return true
	}
	p := r.URL.Path
	for _, prefix := range []string{"/sandboxes", "/v2/sandboxes", "/snapshots", "/volumes", "/volumecontent", "/secrets", "/templates", "/v2/templates", "/v3/templates"} {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return true
		}
	}
	return false
}

// ServeHTTP serves envd for sandbox traffic and the control plane otherwise.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if envd.Matches(r) {
		h.envd.ServeHTTP(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// handle registers an authenticated control-plane route. A path id that
// no id can be (a NUL byte, bytes that are not UTF-8) is not found before
// any lookup (apihttp.CheckPathValues); a query parameter or header with
// a NUL or bytes that are not UTF-8 is refused before it too
// (apihttp.CheckRequestText), in E2B's shape, alike on every store.
func (h *Handler) handle(pattern string, fn func(http.ResponseWriter, *http.Request, Caller) error) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c, err := h.cp.Authenticate(r.Context(), apiKey(r))
		if err == nil {
			err = apihttp.CheckPathValues(r)
		}
		if err == nil {
			err = apihttp.CheckRequestText(r)
		}
		if err == nil {
			err = fn(w, r, c)
		}
		if err != nil {
			h.writeError(w, r, err)
		}
	})
}

// apiKey is the E2B SDK's X-API-Key, or a Bearer token.
func apiKey(r *http.Request) string {
	if k := r.Header.Get("X-API-Key"); k != "" {
		return strings.TrimSpace(k)
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(tok)
	}
	return ""
}

// errorBody is E2B's error shape. The SDK reads "not found" (404) and
// "already paused" (409) from code, not from the HTTP status.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// writeError answers err in E2B's shape: an *api.Error keeps its status and
// message (with its hint), but for /v1's 422, which is 400 as E2B answers
// a request its API refuses (its OpenAPI validator and handlers never
// answer 422: a timeout, metadata or envVars it refuses at create,
// setTimeout, connect or fork are 400), and so is a value the database
// refused (model.RefusedValue); ErrNotFound is 404; anything else is
// logged and becomes a bare 500.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "internal server error"
	if errors.Is(err, ErrNotFound) {
		status, msg = http.StatusNotFound, "sandbox "+r.PathValue("id")+" not found"
	} else if errors.Is(err, ErrAlreadyPaused) {
		status, msg = http.StatusConflict, "sandbox "+r.PathValue("id")+" is already paused"
	} else if e, ok := errors.AsType[*api.Error](err); ok || model.RefusedValue(err) != nil {
		if !ok { // a value the database refused: the client's
			h.log.WarnContext(r.Context(), "e2b request refused by the store", "method", r.Method, "path", r.URL.Path, "err", err)
			e = model.RefusedValue(err)
		}
		status = e.Status
		if status == 0 {
			status = api.StatusOf(e.Code)
		}
		msg = envd.Message(e)
		if e.Code == api.CodeSandboxLost {
			status = http.StatusNotFound
		}
		if status == http.StatusUnprocessableEntity {
			status = http.StatusBadRequest
		}
		if retry := w.Header().Get("Retry-After"); status == http.StatusTooManyRequests && retry == "" {
			if d, ok := e.Details.(map[string]any); ok {
				if v, ok := d["retry_after_seconds"]; ok {
					b, _ := json.Marshal(v)
					w.Header().Set("Retry-After", string(b))
				}
			}
		}
	} else {
		h.log.ErrorContext(r.Context(), "e2b request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, errorBody{Code: status, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":500,"message":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// notSupported answers a route of a feature boxkite does not map yet; on
// a route naming a sandbox, only once the sandbox is the caller's (any
// other is not found, as on every route).
func (h *Handler) notSupported(what string) func(http.ResponseWriter, *http.Request, Caller) error {
	return func(_ http.ResponseWriter, r *http.Request, c Caller) error {
		if id := r.PathValue("id"); id != "" {
			if _, err := h.cp.Sandbox(r.Context(), c, id); err != nil {
				return err
			}
		}
		if strings.HasPrefix(what, "template") && !h.cp.KeepsImages() {
			return errNotSupported(what).WithHint(noImagesTemplateHint)
		}
		return errNotSupported(what)
	}
}

// noImagesTemplateHint is the way around E2B's template API on a server
// that keeps no boxkite images (the kube driver's refuses POST
// /v1/images): its sandboxes run the server's sandbox image.
const noImagesTemplateHint = "this server keeps no images: build FROM the sandbox image with what sandboxes need and set it as the server's " +
	"sandbox image (docs/kubernetes.md); templates base and code-interpreter-v1 run on it; docs/e2b.md lists what is not supported yet"

// errNotSupported is E2B's error shape (the SDK raises SandboxError with
// the message) for a feature boxkite does not map yet, with what to do
// instead.
func errNotSupported(what string) *api.Error {
	return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "%s: not supported by this boxkite server yet", what).
		WithHint(notSupportedHint(what))
}

func notSupportedHint(what string) string {
	const docs = "docs/e2b.md lists what is not supported yet"
	switch {
	case what == "auto-resume":
		return "resume a paused sandbox with Sandbox.connect(id); " + docs
	case what == "auto-pause keeping memory":
		return "auto-pause keeps the files (lifecycle onTimeout: 'pause'); pause with sbx.pause() to keep the memory too; " + docs
	case strings.HasPrefix(what, "internet access"):
		return "boxkite sandboxes reach no network: leave allowInternetAccess unset (or false) and network.allowOut empty; " + docs
	case strings.HasPrefix(what, "volume"):
		return "boxkite's own volumes (/v1/volumes) are not mapped to E2B's yet; " + docs
	case strings.HasPrefix(what, "template"):
		return "build a boxkite image (POST /v1/images; docs/local-mode.md, Images) and pass its id as the template; " + docs
	}
	return docs
}

// sessions opens envd sessions: the record names the sandbox's account
// and the environment its commands start with.
type sessions struct {
	cp    ControlPlane
	store Store
}

func (s sessions) Open(ctx context.Context, id, keyID string) (envd.Session, error) {
	rec, err := s.store.E2BSandbox(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, envd.ErrGone
	}
	if err != nil {
		return nil, err
	}
	return s.cp.Session(ctx, rec.AccountID, id, keyID, rec.EnvVars)
}

func (s sessions) Running(ctx context.Context, sandboxID string) ([]envd.Running, error) {
	return s.cp.Running(ctx, sandboxID)
}
