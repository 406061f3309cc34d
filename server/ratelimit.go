package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// RateLimits are request budgets per minute (reference §3.1). A zero field
// takes its default; a negative one turns that bucket off.
type RateLimits struct {
	// Lifecycle bounds, per account, sandbox create, delete, extend,
	// pause, resume, fork and snapshot restore.
	// Default 20, or 1000 in local mode.
	Lifecycle int
	// Ops bounds, per account, exec and the sandbox tool routes (files,
	// processes, interpreter, lsp). Event streams, log and takeover are
	// not limited. Default 120, or 10000 in local mode.
	Ops int
	// Auth bounds signup and login per client IP, and login per email.
	// Default 10, or 100 in local mode.
	Auth int
	// Snapshot bounds, per account, snapshots taken. Default 10, or 1000
	// in local mode.
	Snapshot int
}

// Default rate limits per minute: the reference's for a shared server, and
// generous ones for local mode, whose one user is also its operator and
// may script hundreds of sandboxes.
var (
	defaultRateLimits = RateLimits{Lifecycle: 20, Ops: 120, Auth: 10, Snapshot: 10}
	localRateLimits   = RateLimits{Lifecycle: 1000, Ops: 10000, Auth: 100, Snapshot: 1000}
)

// withDefaults fills zero fields; local picks the local-mode defaults.
func (l RateLimits) withDefaults(local bool) RateLimits {
	d := defaultRateLimits
	if local {
		d = localRateLimits
	}
	if l.Lifecycle == 0 {
		l.Lifecycle = d.Lifecycle
	}
	if l.Ops == 0 {
		l.Ops = d.Ops
	}
	if l.Auth == 0 {
		l.Auth = d.Auth
	}
	if l.Snapshot == 0 {
		l.Snapshot = d.Snapshot
	}
	return l
}

// Rate-limit buckets.
const (
	bucketLifecycle = "sandbox_lifecycle"
	bucketOps       = "sandbox_ops"
	bucketAuth      = "auth"
	bucketLogin     = "login_email" // login, per email, on top of bucketAuth per IP
	bucketSnapshot  = "snapshot"
)

// unlimitedSandboxRoutes are the routes under a sandbox that no bucket
// counts: long-lived streams, which a client reopens as it needs, and the
// audit log.
var unlimitedSandboxRoutes = map[string]bool{
	"GET /v1/sandboxes/{id}/log":                    true,
	"GET /v1/sandboxes/{id}/watch":                  true,
	"GET /v1/sandboxes/{id}/takeover":               true,
	"GET /v1/sandboxes/{id}/exec/interactive":       true,
	"GET /v1/sandboxes/{id}/processes/{pid}/stream": true,
}

// bucketOf returns the bucket counting requests to a registered pattern,
// "" for none. Deriving it from the pattern keeps routes() a plain list.
func bucketOf(pattern string) string {
	switch pattern {
	case "POST /v1/sandboxes", "DELETE /v1/sandboxes/{id}", "POST /v1/sandboxes/{id}/extend",
		"POST /v1/sandboxes/{id}/pause", "POST /v1/sandboxes/{id}/resume",
		"POST /v1/sandboxes/{id}/fork", "POST /v1/snapshots/{id}/restore":
		return bucketLifecycle
	case "POST /v1/sandboxes/{id}/snapshots":
		return bucketSnapshot
	case "POST /v1/auth/signup", "POST /v1/auth/login", "POST /oauth/register", "POST /oauth/authorize/login":
		return bucketAuth
	}
	_, path, _ := strings.Cut(pattern, " ")
	if strings.HasPrefix(path, "/v1/sandboxes/{id}/") && !unlimitedSandboxRoutes[pattern] {
		return bucketOps
	}
	return ""
}

// rateLimitOf returns the per-minute limit of bucket; ≤ 0 means none.
func (s *Server) rateLimitOf(bucket string) int {
	switch bucket {
	case bucketLifecycle:
		return s.cfg.RateLimits.Lifecycle
	case bucketOps:
		return s.cfg.RateLimits.Ops
	case bucketAuth, bucketLogin:
		return s.cfg.RateLimits.Auth
	case bucketSnapshot:
		return s.cfg.RateLimits.Snapshot
	case bucketDemo: // demo_port.go
		return demoRatePerMinute
	}
	return 0
}

// limitRate counts the request in bucket under subject (an account id or
// a client IP), sets the X-RateLimit headers, and returns a 429 when the
// budget is spent.
func (s *Server) limitRate(w http.ResponseWriter, bucket, subject string) error {
	return s.countRate(w, bucket, subject, true)
}

// countRate is limitRate; with headers false, the X-RateLimit headers
// are left to the route's own bucket (a second budget, such as login's
// per email, shows only in a 429).
func (s *Server) countRate(w http.ResponseWriter, bucket, subject string, headers bool) error {
	limit := s.rateLimitOf(bucket)
	if limit <= 0 {
		return nil
	}
	ok, remaining, reset := s.limiter.Allow(bucket+":"+subject, limit, s.now())
	h := w.Header()
	if headers || !ok {
		h.Set(api.HeaderRateLimitLimit, strconv.Itoa(limit))
		h.Set(api.HeaderRateLimitRemaining, strconv.Itoa(remaining))
	}
	if ok {
		return nil
	}
	secs := int((reset + time.Second - 1) / time.Second)
	secs = max(secs, 1)
	h.Set(api.HeaderRetryAfter, strconv.Itoa(secs))
	return &api.Error{
		Status:  http.StatusTooManyRequests,
		Code:    api.CodeRateLimited,
		Message: fmt.Sprintf("too many requests: at most %d per minute (%s)", limit, bucket),
		Hint:    fmt.Sprintf("wait %d s and try again", secs),
		Details: map[string]any{"bucket": bucket, "limit": limit, "retry_after_seconds": secs},
	}
}
