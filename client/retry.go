package client

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/go-resty/resty/v2"
)

// MinServerVersion is the oldest boxkite-server release this client
// works with. Every answer carries the server's release in
// Boxkite-Version; one older than this fails the call with code
// CodeServerTooOld. "dev" builds and Go pseudo-versions (v0.0.0-…) are
// not checked.
const MinServerVersion = "0.1.0"

// CodeServerTooOld is the code of the error a call returns when the server
// is older than MinServerVersion (the client's own, never the server's).
const CodeServerTooOld = "server_too_old"

// idempotencyKey is the context key of WithIdempotencyKey.
type idempotencyKey struct{}

// WithIdempotencyKey returns a context whose POST calls carry key as
// Idempotency-Key: the server does such a call at most once per API key
// and path, answering a repeat with the first answer (creates retried
// after a lost answer run once). Streamed uploads and streamed execs
// ignore it, as the server does.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// retryable reports whether a refusal is worth sending again: a 429
// rate_limited (not a fair-use limit such as
// concurrent_sandbox_limit_reached), a 503 the server will get over
// (service_unavailable, host_capacity, audit_unavailable,
// sidecar_not_configured, a proxy's bad_response page; not
// secrets_unavailable, which a server without a secrets key answers
// every time), or either with Retry-After; never
// one whose details say performed: true (done, only its audit entry is
// pending).
func retryable(e *api.Error, header http.Header) bool {
	d, _ := e.Details.(map[string]any)
	if performed, _ := d["performed"].(bool); performed {
		return false
	}
	_, hasRetryAfter := parseRetryAfter(header.Get(api.HeaderRetryAfter), time.Now())
	switch e.Status {
	case http.StatusTooManyRequests:
		return e.Code == api.CodeRateLimited || hasRetryAfter
	case http.StatusServiceUnavailable:
		switch e.Code {
		case api.CodeServiceUnavailable, api.CodeHostCapacity, api.CodeAuditUnavailable, api.CodeSidecarNotReady,
			CodeBadResponse: // a proxy's 503 page: its backend is away for now
			return true
		}
		return hasRetryAfter
	}
	return false
}

// retryWait is how long to wait before retry attempt (0-based): what
// Retry-After says, else an exponential backoff with jitter; at most
// MaxRetryWait (60 s when unset).
func (c *Client) retryWait(attempt int, header http.Header) time.Duration {
	ceiling := c.MaxRetryWait
	if ceiling <= 0 {
		ceiling = time.Minute
	}
	d := time.Duration(float64(500*time.Millisecond<<min(attempt, 4)) * (0.5 + rand.Float64()))
	if ra, ok := parseRetryAfter(header.Get(api.HeaderRetryAfter), time.Now()); ok {
		d = ra
	}
	return min(d, ceiling)
}

// parseRetryAfter reads Retry-After: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// replayable reports whether r's body can be sent again: none, or a value
// resty encodes (not a reader it consumes).
func replayable(r *resty.Request) bool {
	_, reader := r.Body.(io.Reader)
	return !reader
}

// releaseVersion matches a release: v1.2.3, 1.2.3-rc1 (a pseudo-version
// v0.0.0-… is none).
var releaseVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(.*)$`)

// versionTuple is a release's (major, minor, patch), false for builds not
// checked ("dev", pseudo-versions).
func versionTuple(v string) ([3]int, bool) {
	m := releaseVersion.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return [3]int{}, false
	}
	var t [3]int
	for i := range t {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return [3]int{}, false
		}
		t[i] = n
	}
	if t == [3]int{} && m[4] != "" {
		return [3]int{}, false
	}
	return t, true
}

// serverTooOld returns the error for a server whose Boxkite-Version is a
// release older than MinServerVersion, nil otherwise.
func serverTooOld(header http.Header) *api.Error {
	v := header.Get(api.HeaderServerVersion)
	have, ok := versionTuple(v)
	want, _ := versionTuple(MinServerVersion)
	if !ok {
		return nil
	}
	for i := range have {
		if have[i] != want[i] {
			if have[i] > want[i] {
				return nil
			}
			return &api.Error{
				Code:    CodeServerTooOld,
				Message: fmt.Sprintf("boxkite-server %s is older than %s, the oldest this client supports", v, MinServerVersion),
				Hint:    "upgrade boxkite-server to " + MinServerVersion + " or later, or use a client of the server's release",
			}
		}
	}
	return nil
}

// versionCheck is the transport that refuses answers of a server older
// than MinServerVersion, for every kind of call.
type versionCheck struct{ next http.RoundTripper }

func (v versionCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if e := serverTooOld(resp.Header); e != nil {
		resp.Body.Close()
		return nil, e
	}
	return resp, nil
}
