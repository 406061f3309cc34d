package sidecar

import (
	"log/slog"
	"net/http"
)

// Options configure a sidecar Handler.
type Options struct {
	Token     string       // required on every route but /health; empty means fail closed (503)
	Version   string       // reported by /health
	Log       *slog.Logger // nil means slog.Default()
	Workspace string       // root for relative paths and default cwd; "" means /workspace
	RunAs     *RunAs       // the sandbox user commands run as; nil means the sidecar's own user
	Env       []string     // base environment of commands; nil means SafeEnv
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
	opts Options
	mux  *http.ServeMux
}

// New returns a Handler for opts.
func New(opts Options) *Handler {
	h := &Handler{opts: opts, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"healthy"}`))
	})
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }
