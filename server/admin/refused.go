package admin

import (
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
)

// refusedPerMinute bounds the access log's rows of unauthenticated
// attempts (no key, a bad key, an access token): anyone can send them,
// so a flood must not grow the table without end. Beyond it in a minute
// they are counted, and the count is in the server's log.
const refusedPerMinute = 60

// refusalWindow counts the unauthenticated attempts of the current
// minute.
type refusalWindow struct {
	mu      sync.Mutex
	start   time.Time
	written int
	dropped int
}

// admit reports whether an attempt at now gets a row, and how many were
// dropped in the window that now ends (0 if none, or if it has not).
func (w *refusalWindow) admit(now time.Time) (ok bool, droppedBefore int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.start.IsZero() || now.Sub(w.start) >= time.Minute || now.Before(w.start) {
		droppedBefore = w.dropped
		w.start, w.written, w.dropped = now, 0, 0
	}
	if w.written >= refusedPerMinute {
		w.dropped++
		return false, droppedBefore
	}
	w.written++
	return true, droppedBefore
}

// refused logs a call to /v1/admin/* that the credential check refused
// (401): the caller is unknown, and the presented secret is never
// written, only the method, path, query and status. The query of an
// admin route holds no secret (its key comes as a header only).
func (s *Service) refused(r *http.Request, err error) {
	ctx := r.Context()
	status := http.StatusUnauthorized
	var ae *api.Error
	if errors.As(err, &ae) {
		status = cmpStatus(ae.Status, api.StatusOf(ae.Code))
	}
	ok, dropped := s.refusal.admit(s.d.Now())
	if dropped > 0 {
		s.d.Log.WarnContext(ctx, "admin access: unauthenticated attempts beyond the log's bound were not written",
			"count", dropped, "per_minute", refusedPerMinute)
	}
	if !ok {
		return
	}
	r2 := r.Clone(ctx)
	r2.URL.RawQuery = redactQuery(r.URL.RawQuery)
	s.logAccess(ctx, r2, &authz.Caller{}, status)
}

// maxRefusedQuery bounds the query an unauthenticated row keeps.
const maxRefusedQuery = 1024

// redactQuery drops the values of parameters that carry credentials
// elsewhere in the API (a caller may send one by mistake) and cuts the
// rest to maxRefusedQuery bytes.
func redactQuery(raw string) string {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "(unparsable query not kept)"
	}
	for _, k := range []string{"api_key", "token", "access_token"} {
		if q.Has(k) {
			q.Set(k, "REDACTED")
		}
	}
	out := q.Encode()
	if len(out) > maxRefusedQuery {
		out = out[:maxRefusedQuery]
	}
	return out
}
