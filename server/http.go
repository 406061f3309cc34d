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
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// requestInfo is the one value this package keeps in a request's context:
// the request id (for logs and error bodies) and, once authenticated, the
// caller. The logging middleware creates it; auth fills it in.
type requestInfo struct {
	id      string
	account *model.Account
	key     *model.APIKey
	grant   *takeoverGrant // set instead of key for a takeover token
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return ri
}

// accountFrom returns the authenticated account. Only handlers registered
// with handle (which authenticates first) may call it.
func accountFrom(ctx context.Context) *model.Account { return infoFrom(ctx).account }

// ctxHandler adds the request id from the context to every log record, so
// any s.log.XxxContext(ctx, …) call made while serving a request carries it.
type ctxHandler struct{ slog.Handler }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if ri := infoFrom(ctx); ri != nil {
		r.AddAttrs(slog.String("request_id", ri.id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h ctxHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return ctxHandler{h.Handler.WithAttrs(as)}
}

func (h ctxHandler) WithGroup(name string) slog.Handler { return ctxHandler{h.Handler.WithGroup(name)} }

// ServeHTTP assigns the request id, sets the common headers, starts the
// body's deadline, recovers from panics and logs one line per request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := apihttp.RequestID(r)
	h := w.Header()
	h.Set("X-Request-ID", id)
	h.Set(api.HeaderServerVersion, s.cfg.Version)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	ri := &requestInfo{id: id}
	r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
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
		s.metrics.request(r.Pattern, rec.Status, time.Since(start))
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
		if ri.account != nil {
			attrs = append(attrs, slog.String("account", ri.account.ID))
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
	}()
	if s.e2b != nil && s.e2bMatch(r) {
		s.e2b.ServeHTTP(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// handle registers an error-returning handler authenticated by API key
// (see register for what else guards it).
func (s *Server) handle(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.register(pattern, httpx.CredAPIKey, h)
}

// handleQueryKey registers an authenticated handler that also accepts the
// API key as ?api_key= (see authenticateQuery).
func (s *Server) handleQueryKey(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.register(pattern, httpx.CredAPIKeyQuery, h)
}

// handlePublic registers an error-returning handler that needs no credentials.
func (s *Server) handlePublic(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.register(pattern, httpx.CredNone, h)
}

// writeError sends err as the error envelope. An *api.Error goes out as
// is; anything else is logged with its cause and becomes a bare 500, so
// internals never reach the client. If the response already started (a
// stream broke), the error can only be logged.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	if rec, ok := w.(*httpx.ResponseRecorder); ok && rec.Status != 0 {
		s.log.WarnContext(ctx, "response interrupted", "err", err)
		return
	}
	var e api.Error
	if ae, ok := errors.AsType[*api.Error](err); ok {
		e = *ae
	} else {
		s.log.ErrorContext(ctx, "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		e = api.Error{
			Code: api.CodeInternal, Message: "internal server error",
			Hint: "retry; if it keeps failing, report the request id to the operator",
		}
	}
	if e.Status == 0 {
		e.Status = api.StatusOf(e.Code)
	}
	if ri := infoFrom(ctx); ri != nil {
		e.RequestID = ri.id
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="boxkite"`)
	}
	httpx.WriteJSON(w, e.Status, api.ErrorEnvelope{Error: &e})
}
