package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// accountFrom returns the authenticated account. Only handlers registered
// with handle (which authenticates first) may call it.
func accountFrom(ctx context.Context) *model.Account { return authz.Account(ctx) }

// ServeHTTP assigns the request id, sets the common headers, starts the
// body's deadline, recovers from panics and logs one line per request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Never on a preview's host: that origin is the app's, whose scripts
	// would read a console opened there, and its sign-in (preview.Matches).
	if s.console != nil && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/")) &&
		(s.preview == nil || !s.preview.Matches(r)) {
		s.console.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	id := apihttp.RequestID(r)
	h := w.Header()
	h.Set("X-Request-ID", id)
	h.Set(api.HeaderServerVersion, s.cfg.Version)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	info := &httpx.Info{ID: id}
	r = r.WithContext(httpx.WithInfo(r.Context(), info))
	rec := &httpx.ResponseRecorder{ResponseWriter: w}
	r = s.cfg.BodyTimeouts.Apply(rec, r)
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.writeError(rec, r, fmt.Errorf("panic: %v", p))
		}
		// r.Pattern is the route the mux matched, set on r by ServeHTTP.
		s.metrics.Request(r.Pattern, rec.Status, time.Since(start))
		level := slog.LevelInfo
		if strings.HasPrefix(r.URL.Path, "/health") && rec.Status < 500 {
			level = slog.LevelDebug // `boxkite up` and probes poll these
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.Status),
			slog.Int64("bytes", rec.Bytes),
			slog.Duration("duration", time.Since(start)),
		}
		if info.Caller != nil && info.Caller.AccountID() != "" {
			attrs = append(attrs, slog.String("account", info.Caller.AccountID()))
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
	}()
	if s.preview.ServeHost(rec, r) {
		return
	}
	if s.e2b != nil && s.e2bMatch(r) {
		s.e2b.ServeHTTP(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// MountConsole serves h (server/console) at /ui/, before the API's own
// request handling: the console's calls come back in through ServeHTTP as
// API requests, logged, limited and authorized as any other.
func (s *Server) MountConsole(h http.Handler) { s.console = h }

// handlePublic registers an error-returning handler that needs no credentials.
func (s *Server) handlePublic(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.register(httpx.Route{RouteDoc: httpx.RouteDoc{Pattern: pattern}, Cred: httpx.CredNone, Handler: h})
}

// writeError sends err as the error envelope (httpx.WriteError). A
// database that takes no writes, or a host out of space, is said so (507
// or 503 with the reason), not a bare 500: the client's retry is right
// once there is room again. A value the database refused is the client's
// 422 (model.RefusedValue).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if ae := storageAnswer(err); ae != nil {
		s.log.ErrorContext(r.Context(), "storage refused", "method", r.Method, "path", r.URL.Path, "err", err)
		err = ae
	}
	httpx.WriteError(s.log, w, r, err)
}

// storageAnswer is the answer to err when it is not an API error and says
// the database or the host could not store what the request changed, or
// that the database refused a value of the request (model.RefusedValue),
// else nil.
func storageAnswer(err error) *api.Error {
	if _, ok := errors.AsType[*api.Error](err); ok {
		return nil
	}
	if ae := model.RefusedValue(err); ae != nil {
		return ae
	}
	switch {
	case model.IsStorageFault(err):
		return &api.Error{
			Status: http.StatusInsufficientStorage, Code: api.CodeInsufficientStorage,
			Message: "could not save the change: " + storageReason(err),
			Hint:    "free space on the host (remove sandboxes, snapshots and volumes you no longer need), then retry",
			Details: map[string]any{"resource": api.HostDiskResource},
		}
	case errors.Is(err, model.ErrStoreReadOnly), errors.Is(err, model.ErrStoreIO):
		return api.Errorf(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "could not save the change: %s", storageReason(err)).
			WithHint("retry once the database takes writes again; the server log has the cause under this request id")
	}
	return nil
}

// storageReason says which store refused, without the error's internals.
func storageReason(err error) string {
	for _, known := range []error{model.ErrStoreFull, model.ErrStoreReadOnly, model.ErrStoreIO} {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	return "the host's disk is full"
}

func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) error {
	if e := apihttp.MethodNotAllowed(w, r, s.mux, "/"); e != nil {
		return e
	}
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path)
}
