package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
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

// responseRecorder remembers the status for the request log and whether
// the response has started, so a late error is logged instead of written
// into the middle of a body.
type responseRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *responseRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *responseRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Flush lets streamed exec output through line by line.
func (r *responseRecorder) Flush() {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *responseRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// ServeHTTP assigns the request id, sets the common headers, starts the
// body's deadline, recovers from panics and logs one line per request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.console != nil && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/")) {
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
	ri := &requestInfo{id: id}
	r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
	rec := &responseRecorder{ResponseWriter: w}
	r = s.cfg.BodyTimeouts.Apply(rec, r)
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.writeError(rec, r, fmt.Errorf("panic: %v", p))
		}
		// r.Pattern is the route the mux matched, set on r by ServeHTTP.
		s.metrics.request(r.Pattern, rec.status, time.Since(start))
		level := slog.LevelInfo
		if strings.HasPrefix(r.URL.Path, "/health") && rec.status < 500 {
			level = slog.LevelDebug // `boxkite up` and probes poll these
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
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

// MountConsole serves h (server/console) at /ui/, before the API's own
// request handling: the console's calls come back in through ServeHTTP as
// API requests, logged, limited and authorized as any other.
func (s *Server) MountConsole(h http.Handler) { s.console = h }

// handle registers an error-returning handler authenticated by API key
// (see register for what else guards it).
func (s *Server) handle(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.register(pattern, credAPIKey, h)
}

// handleQueryKey registers an authenticated handler that also accepts the
// API key as ?api_key= (see authenticateQuery).
func (s *Server) handleQueryKey(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.register(pattern, credAPIKeyQuery, h)
}

// handlePublic registers an error-returning handler that needs no credentials.
func (s *Server) handlePublic(pattern string, h func(http.ResponseWriter, *http.Request) error) {
	s.register(pattern, credNone, h)
}

// writeError sends err as the error envelope. An *api.Error goes out as
// is; anything else is logged with its cause and becomes a bare 500, so
// internals never reach the client. If the response already started (a
// stream broke), the error can only be logged.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	if rec, ok := w.(*responseRecorder); ok && rec.status != 0 {
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
	writeJSON(w, e.Status, api.ErrorEnvelope{Error: &e})
}

// writeJSON sends v with status. Encoding our own types cannot fail, and a
// failed write means the client went away; neither has anyone to tell.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// Request body limits.
const (
	maxSmallBody = 1 << 20  // create, extend
	maxExecBody  = 16 << 20 // exec carries stdin
)

// decodeJSON reads a JSON body into v by the rules both APIs share
// (apihttp.DecodeJSON): an empty body leaves v as is, unknown fields are
// ignored so that newer clients work against older servers.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	return apihttp.DecodeJSON(w, r, v, limit)
}

// fieldError is one entry of a validation error's details.
type fieldError = api.FieldError

// invalid returns a 422 validation_error about one body field.
func invalid(field, msg, hint string) *api.Error { return api.Invalid(field, msg, hint) }

// notSupported returns a 422 for a field this server accepts in the schema
// but cannot act on yet, rather than silently ignoring it.
func notSupported(field, hint string) *api.Error {
	msg := field + " is not supported by this server yet"
	return &api.Error{
		Status:  http.StatusUnprocessableEntity,
		Code:    api.CodeNotSupported,
		Message: msg,
		Hint:    hint,
		Details: []fieldError{{Loc: []string{"body", field}, Msg: msg, Type: "not_supported"}},
	}
}
