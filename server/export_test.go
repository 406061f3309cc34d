package server

import (
	"context"
	"time"
)

// Hooks for the external tests in server_test.

// SetNow replaces the server's clock.
func (s *Server) SetNow(now func() time.Time) { s.now = now }

// SetHealthTimeout changes how long Init waits for sidecars to answer.
func (s *Server) SetHealthTimeout(d time.Duration) { s.healthTimeout = d }

// Reap runs one reaper pass.
func (s *Server) Reap(ctx context.Context) { s.reap(ctx) }

// BucketOf is the rate-limit bucket of a route pattern; "" for none.
func BucketOf(pattern string) string { return bucketOf(pattern) }

// ProxyRoutes returns "METHOD /path" of every proxied route, paths under
// /v1/sandboxes/{id}, so tests can check they cover the whole table.
func ProxyRoutes() []string {
	var out []string
	for _, rt := range proxyRoutes() {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}
