package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// Info is the one value the control plane keeps in a request's context:
// the request id (for logs and error bodies) and, once the guard
// authenticated the request, its caller, which httpx only carries
// (server/internal/authz gives it its type).
type Info struct {
	ID     string
	Caller interface{ AccountID() string }
}

type infoKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the request's Info, nil outside a request.
func InfoFrom(ctx context.Context) *Info {
	info, _ := ctx.Value(infoKey{}).(*Info)
	return info
}

// RequestID returns the request id, "" outside a request.
func RequestID(ctx context.Context) string {
	if info := InfoFrom(ctx); info != nil {
		return info.ID
	}
	return ""
}

// LogHandler adds the request id from the context to every log record, so
// any log.XxxContext(ctx, …) call made while serving a request carries it.
type LogHandler struct{ slog.Handler }

// Handle implements slog.Handler.
func (h LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if info := InfoFrom(ctx); info != nil {
		r.AddAttrs(slog.String("request_id", info.ID))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h LogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return LogHandler{h.Handler.WithAttrs(as)}
}

// WithGroup implements slog.Handler.
func (h LogHandler) WithGroup(name string) slog.Handler { return LogHandler{h.Handler.WithGroup(name)} }

// WriteError sends err as the error envelope. An *api.Error goes out as
// is; anything else is logged with its cause and becomes a bare 500, so
// internals never reach the client. If the response already started (a
// stream broke), the error can only be logged.
func WriteError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	if rec, ok := w.(*ResponseRecorder); ok && rec.Status != 0 {
		log.WarnContext(ctx, "response interrupted", "err", err)
		return
	}
	var e api.Error
	if ae, ok := errors.AsType[*api.Error](err); ok {
		e = *ae
	} else {
		log.ErrorContext(ctx, "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		e = api.Error{
			Code: api.CodeInternal, Message: "internal server error",
			Hint: "retry; if it keeps failing, report the request id to the operator",
		}
	}
	if e.Status == 0 {
		e.Status = api.StatusOf(e.Code)
	}
	if info := InfoFrom(ctx); info != nil {
		e.RequestID = info.ID
	}
	if e.Status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" { // a route's own challenge stays (server/oauth's)
		w.Header().Set("WWW-Authenticate", `Bearer realm="boxkite"`)
	}
	WriteJSON(w, e.Status, api.ErrorEnvelope{Error: &e})
}
