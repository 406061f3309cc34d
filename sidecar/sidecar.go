package sidecar

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/internal/keylock"
)

// defaultWorkspace is the workspace when Options.Workspace is empty.
const defaultWorkspace = "/workspace"

// maxBodyBytes bounds a JSON request body; exec stdin travels inside it.
const maxBodyBytes = 16 << 20

// Options configure a sidecar Handler.
type Options struct {
	Token     string       // required on every route but /health; empty means fail closed (503)
	Version   string       // reported by /health
	Log       *slog.Logger // nil means slog.Default()
	Workspace string       // absolute root for relative paths and default cwd; "" means /workspace
	RunAs     *RunAs       // the sandbox user commands run as; nil means the sidecar's own user
	Env       []string     // base environment of commands; nil means SafeEnv(Workspace)
	Roots     Roots        // where the typed roots live (paths.go); zero fields mean their in-jail paths
	Limits    FileLimits   // caps of the file routes (files_routes.go); zero fields mean the reference's
	Tools     ToolLimits   // processes, interpreter, LSP and the exec budget (process_routes.go); zero fields mean defaults
	// Claimable serves POST /claim, which replaces Token once, for a
	// sidecar waiting unused in a warm pool (claim.go).
	Claimable bool
	// BodyTimeouts bound how long a request body may take to arrive
	// (408 request_timeout); zero fields take apihttp's defaults.
	BodyTimeouts apihttp.BodyTimeouts
	// SelfCommand returns the path and argv that run the sidecar binary
	// with args (the sftp subsystem runs `boxkite-sidecar sftp-server`);
	// nil means /proc/self/exe. A jail that starts the sidecar through the
	// host's loader sets it (jail.ServeCommand).
	SelfCommand func(args ...string) (path string, argv []string)
	// Usage reads the use of the cgroup the sidecar runs in, for GET
	// /usage (usage.go); nil means it answers not_supported.
	Usage func() (api.SidecarUsage, error)

	// slowOutput, when set (by tests), runs before each output frame of
	// an interactive exec or of the shared terminal is sent (a client
	// slow to take the output) and before each read of a background
	// process's, of the shared terminal's or of an exec's output waited
	// for with goroutines is kept (a reader not scheduled).
	slowOutput func()
	// slowKill, when set (by tests), runs when an exec's wait has taken the
	// time to kill a command's group after its grace, before it does: the
	// wait's goroutine not scheduled for a while, as on a loaded host.
	slowKill func()
	// goroutineWait, when set (by tests), makes an exec wait for its
	// command with goroutines (watchGoroutines), as on a kernel that gives
	// no pidfd or epoll instance.
	goroutineWait bool
}

// RunAs says how commands drop to the sandbox user.
type RunAs struct {
	UID, GID int
	// NestedUserNS runs each command in a new user namespace that maps UID/GID
	// to the sidecar's own ids, for jails without a uid range (unprivileged hosts).
	NestedUserNS bool
}

// Handler serves the sidecar API. Build it with New.
type Handler struct {
	opts      Options
	log       *slog.Logger
	workspace string
	env       []string
	auth      auth // the token, replaceable once by /claim (claim.go)
	// mux serves what a new sandbox's first requests need: /health (the
	// driver's readiness wait) and POST /exec; every other request goes to
	// full, the mux of every route, built by the first of them. Registering
	// the ~45 patterns (their parsing, conflict checks and a runtime.Caller
	// each) was ~26 of the ~440 page faults of a jail's start before its
	// first exec answered (issue 27); a sandbox that only runs commands
	// never pays them.
	mux  *http.ServeMux
	full func() *http.ServeMux
	sess *session // long-lived tools, budget and metrics; see process_routes.go
	// execs are the streamed execs running, for their signals (exec_signal.go).
	execs execTable
	// edits serialises str-replace per file (editLock).
	edits keylock.Locks[editKey]
	// protocol is api.SidecarProtocol as the value of the
	// api.HeaderSidecarProtocol every answer but a preview's carries.
	protocol string
	fsr      fsRoots // the typed roots and who file work runs as; see resolve.go
	jmu      sync.Mutex
	jrn      *journal // the workspace's change journal, once the storage sync asked (journal.go)
	// newInotify makes the journal's inotify instance (journal_linux.go);
	// a test stands in for a kernel that has none to give (EMFILE).
	newInotify func() (int, error)
	shIsDash   func() bool // whether /bin/sh is dash, looked at once, at the first exec (direct.go)
	// devNull is the stdin of every command given none, opened at the
	// first exec; nil if it cannot be (os/exec then opens its own).
	devNull func() *os.File
	// readBufs holds the readChunk buffers of commands' output readers
	// (*[]byte), two an exec: made afresh they were 64 KiB of garbage an
	// exec, zeroed each time, and a collection every few dozen execs.
	readBufs sync.Pool
	pollers  pollerPool // epoll instances of finished execs (execloop_linux.go)
}

// New returns a Handler for opts. It does no I/O.
func New(opts Options) *Handler {
	h := &Handler{
		opts: opts, log: opts.Log, workspace: opts.Workspace, env: opts.Env, newInotify: newInotify,
		protocol: strconv.Itoa(api.SidecarProtocol),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.workspace == "" {
		h.workspace = defaultWorkspace
	}
	h.workspace = filepath.Clean(h.workspace)
	if h.env == nil {
		h.env = SafeEnv(h.workspace)
	}
	h.shIsDash = sync.OnceValue(func() bool { return shIsDashAt("/bin/sh") })
	h.devNull = sync.OnceValue(func() *os.File {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil
		}
		return f
	})
	h.readBufs.New = func() any { b := make([]byte, readChunk); return &b }
	h.auth.set(opts.Token)
	h.newSession()
	h.full = sync.OnceValue(h.routes)
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /health", h.health) // no auth: probes and the driver's readiness wait
	h.mux.HandleFunc("POST /exec", h.handler(h.budgeted(h.exec)))
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { h.full().ServeHTTP(w, r) }) // sets r.Pattern again
	if opts.Claimable {
		// A warm pool's member starts ahead of any request, and its first
		// request, the claim, is on a create's path: it pays now.
		h.full()
	}
	return h
}

// routes returns the mux of every route, the two of New's own mux among them.
func (h *Handler) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /health", h.health)
	h.handle(m, "POST /exec", h.budgeted(h.exec))
	h.handle(m, "GET /exec/interactive", h.budgeted(h.execInteractive)) // interactive.go
	h.handle(m, "POST /exec/{exec_id}/signal", h.execSignal)            // exec_signal.go
	h.syncRoutes(m)                                                     // synctree.go: the storage sync's reads, never following links
	h.fileRoutes(m)                                                     // files_routes.go: files, search, watch, raw and archive transfer
	h.processRoutes(m)                                                  // process_routes.go: processes, interpreter, PTY, LSP, budget, metrics
	h.handle(m, previewPattern, h.preview)                              // preview.go: a port of the sandbox's network namespace
	h.handle(m, "GET /usage", h.usage)                                  // usage.go: its cgroup's memory and CPU time
	if h.opts.Claimable {
		h.handle(m, claimPattern, h.claim) // claim.go: a warm-pool sidecar gets its sandbox's token
	}
	h.handle(m, "/", h.notFound)
	return m
}

// ServeHTTP gives the request an id (the control plane's, or a new one),
// starts the body's deadline, logs every request at Debug and dispatches it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := apihttp.RequestID(r)
	r.Header.Set("X-Request-ID", id)
	w.Header().Set("X-Request-ID", id)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sw := &statusWriter{ResponseWriter: w}
	r = h.opts.BodyTimeouts.Apply(sw, r)
	if streamedUpload(r) {
		apihttp.Streaming(r)
	}
	if port, ok := previewPort(r.URL.Path); ok {
		// Not through a mux, which would clean the app's path ("//a",
		// "/a/../b") and redirect the browser to a path of the sidecar's
		// on the preview's origin: the app gets the path as sent. No
		// protocol header: the answer's headers are the app's own.
		r.Pattern = previewPattern
		r.SetPathValue("port", port)
		h.handler(h.preview)(sw, r)
	} else {
		w.Header()[api.HeaderSidecarProtocol] = []string{h.protocol} // canonical already
		h.mux.ServeHTTP(sw, r)
	}
	h.sess.metrics.request(r.Pattern, sw.status()) // the mux set r.Pattern
	h.log.LogAttrs(r.Context(), slog.LevelDebug, "request",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", sw.status()),
		slog.Duration("duration", time.Since(start)),
		slog.String("request_id", r.Header.Get("X-Request-ID")),
	)
}

// streamedUpload reports whether r is an upload of any size, which times
// out only when it stalls rather than after a fixed time.
func streamedUpload(r *http.Request) bool {
	switch r.Method + " " + r.URL.Path {
	case "PUT /files/raw", "POST /files/archive":
		return true
	}
	return strings.HasPrefix(r.URL.Path, "/preview/") // an app's uploads and streams
}

// health answers that the sidecar is up. It needs no token, but a caller
// that presents one learns whether it is this sidecar's: a wrong token is
// refused with 401, as on every other route, and a right one is not a
// use (a pool member stays claimable). The control plane's restart asks
// so of every sandbox it would adopt: a warm create commits its row while
// the claim is under way, and a sidecar that refused that claim keeps the
// pool's token and would refuse every call with the row's
// (bench/issue27/session13-warm13.md).
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	if token := r.Header.Get(api.HeaderSidecarToken); token != "" && !h.auth.accepts(token) {
		h.writeError(w, r, api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "missing or invalid sidecar auth token"))
		return
	}
	_ = writeJSON(w, http.StatusOK, api.Health{Status: "healthy", Version: h.opts.Version})
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) error {
	if e := apihttp.MethodNotAllowed(w, r, h.full(), "/"); e != nil {
		return e
	}
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "no route %s %s", r.Method, r.URL.Path)
}

// handle registers on m an authenticated, error-returning handler (handler).
func (h *Handler) handle(m *http.ServeMux, pattern string, fn func(http.ResponseWriter, *http.Request) error) {
	m.HandleFunc(pattern, h.handler(fn))
}

// handler is fn authenticated. An *api.Error is sent as is; any other error
// is logged and becomes a bare 500 so internals never reach the client.
func (h *Handler) handler(fn func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h.authorize(r)
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			h.writeError(w, r, err)
		}
	}
}

// authorize fails closed: without a configured token nothing but /health
// answers. Every authorized request but a claim marks the sidecar used,
// under the same lock a claim takes, so a claim can tell for sure.
func (h *Handler) authorize(r *http.Request) error {
	h.auth.mu.RLock()
	defer h.auth.mu.RUnlock()
	if !h.auth.configured {
		return api.Errorf(http.StatusServiceUnavailable, api.CodeSidecarNotReady, "sidecar auth is not configured").
			WithHint("start the sidecar with a per-sandbox token")
	}
	got := sha256.Sum256([]byte(r.Header.Get(api.HeaderSidecarToken)))
	if r.Header.Get(api.HeaderSidecarToken) == "" || subtle.ConstantTimeCompare(got[:], h.auth.hash[:]) != 1 {
		return api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "missing or invalid sidecar auth token")
	}
	if r.Pattern != claimPattern {
		h.auth.used.Store(true)
	}
	return nil
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := errors.AsType[*api.Error](err)
	if !ok {
		h.log.ErrorContext(r.Context(), "request failed",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("request_id", r.Header.Get("X-Request-ID")),
			slog.Any("err", err))
		e = api.Errorf(http.StatusInternalServerError, api.CodeInternal, "internal error")
	}
	c := *e
	if c.Status == 0 {
		c.Status = api.StatusOf(c.Code)
	}
	c.RequestID = r.Header.Get("X-Request-ID")
	_ = writeJSON(w, c.Status, api.ErrorEnvelope{Error: &c})
}

// decodeJSON reads a JSON body into v by the rules the control plane
// uses too (apihttp.DecodeJSON), so both refuse a body alike. An empty
// body leaves v as is; unknown fields are accepted so an older sidecar
// keeps working behind a newer control plane.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return apihttp.DecodeJSON(w, r, v, maxBodyBytes)
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// statusWriter remembers the status for the request log. Unwrap lets
// http.ResponseController reach the real writer to flush streams.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}
