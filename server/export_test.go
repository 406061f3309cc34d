package server

import (
	"context"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/proxy"
)

// Hooks for the external tests in server_test.

// SetNow replaces the server's clock.
func (s *Server) SetNow(now func() time.Time) { s.now = now }

// Instance is the server's id among those sharing the store (its
// heartbeat's, its snapshots' owner).
func (s *Server) Instance() string { return s.instance }

// SetAfterFunc replaces the timers the server keeps by its clock (a key's
// expiry), for a clock SetNow moved.
func (s *Server) SetAfterFunc(after func(d time.Duration, f func()) (stop func() bool)) {
	s.afterFunc = after
}

// SetHealthTimeout changes how long Init waits for sidecars to answer.
func (s *Server) SetHealthTimeout(d time.Duration) { s.healthTimeout = d }

// Reap runs one reaper pass.
func (s *Server) Reap(ctx context.Context) { s.sandboxes.Reap(ctx) }

// FinishRemovals retries the removals torn down or begun but not finished,
// as each reaper tick does.
func (s *Server) FinishRemovals(ctx context.Context) { s.sandboxes.FinishRemovals(ctx) }

// ReapPaused runs one sweep of paused sandboxes past their retention.
func (s *Server) ReapPaused(ctx context.Context) { s.sandboxes.ReapPaused(ctx) }

// BucketOf is the rate-limit bucket of a route pattern; "" for none.
func BucketOf(pattern string) string { return bucketOf(pattern) }

// ProxyRoutes returns "METHOD /path" of every proxied route, paths under
// /v1/sandboxes/{id}, so tests can check they cover the whole table.
func ProxyRoutes() []string {
	var out []string
	for _, rt := range (&proxy.Service{}).Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		out = append(out, method+" "+strings.TrimPrefix(path, "/v1/sandboxes/{id}"))
	}
	return out
}

// RouteHandler is one registered route as the route list shows it.
type RouteHandler struct {
	Pattern, Cred string
	Func          string // the handler's function, runtime name
	File          string // its file, absolute
	MuxPattern    func(r *http.Request) string
}

// RouteHandlers lists the registered routes with their handlers, in
// registration order, and lets a test ask the mux which pattern serves a
// request.
func (s *Server) RouteHandlers() []RouteHandler {
	out := make([]RouteHandler, len(s.registered))
	for i, rt := range s.registered {
		fn := runtime.FuncForPC(reflect.ValueOf(rt.Handler).Pointer())
		file, _ := fn.FileLine(fn.Entry())
		out[i] = RouteHandler{
			Pattern: rt.Pattern, Cred: rt.Cred.String(), Func: fn.Name(), File: file,
			MuxPattern: func(r *http.Request) string { _, p := s.mux.Handler(r); return p },
		}
	}
	return out
}

// StoreAuthorized reports whether the server reaches its store through
// the authorization layer only.
func (s *Server) StoreAuthorized() bool {
	_, ok := s.store.(*authz.Store)
	return ok
}
