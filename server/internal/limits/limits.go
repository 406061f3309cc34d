package limits

import (
	"bytes"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/netsource"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// rateWindow is the length of a rate-limit window.
const rateWindow = time.Minute

// RateLimiter counts requests per key in fixed one-minute windows, in
// memory: each server process keeps its own counts (as the reference's
// memory backend), so N servers behind a balancer allow up to N times
// the limit.
type RateLimiter struct {
	mu        sync.Mutex
	windows   map[string]*window
	lastSweep time.Time
}

type window struct {
	start time.Time
	count int
}

func NewRateLimiter() *RateLimiter { return &RateLimiter{windows: map[string]*window{}} }

// Allow counts a request for key against limit and reports whether it may
// proceed, how many requests the window has left, and when it resets.
func (l *RateLimiter) Allow(key string, limit int, now time.Time) (ok bool, remaining int, reset time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= rateWindow {
		// Forget finished windows, so keys seen once do not pile up.
		for k, w := range l.windows {
			if now.Sub(w.start) >= rateWindow {
				delete(l.windows, k)
			}
		}
		l.lastSweep = now
	}
	w := l.windows[key]
	if w == nil || now.Sub(w.start) >= rateWindow || now.Before(w.start) {
		w = &window{start: now}
		l.windows[key] = w
	}
	reset = w.start.Add(rateWindow).Sub(now)
	if w.count >= limit {
		return false, 0, reset
	}
	w.count++
	return true, limit - w.count, reset
}

// Refund gives back a request Allow counted for key in the window still
// open: a limit on failures counts each attempt before it runs (so
// attempts at once cannot pass it together) and refunds those that
// succeed.
func (l *RateLimiter) Refund(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.windows[key]; w != nil && w.count > 0 && now.Sub(w.start) < rateWindow && !now.Before(w.start) {
		w.count--
	}
}

// ClientSource is the source the request came from, as the rate limits
// count it: the connection's IPv4 address, or the /64 of its IPv6 one
// (netsource.Key), since one host is usually given a whole /64 and could
// otherwise take a fresh budget with each address. X-Forwarded-For is not
// trusted: behind a proxy, every client shares the proxy's budget, which
// is safe, where trusting the header would let anyone pick their own.
func ClientSource(r *http.Request) string {
	return netsource.Key(r.RemoteAddr)
}

// maxReplayBody bounds a kept answer; a longer one is not kept and the
// key is released (a retry runs again).
const maxReplayBody = 1 << 20

func ValidIdempotencyKey(k string) bool {
	if len(k) > httpx.MaxIdempotencyKeyLen {
		return false
	}
	for i := range len(k) {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Replay answers with a kept record, or refuses when it cannot.
func Replay(w http.ResponseWriter, old *model.IdempotencyRecord, requestHash string) error {
	switch {
	case old.RequestHash != requestHash:
		return &api.Error{
			Status: http.StatusUnprocessableEntity, Code: api.CodeIdempotencyKeyReuse,
			Message: "this Idempotency-Key was used for a request with a different body",
			Hint:    "use a new key for a new request",
		}
	case old.State != model.IdempotencyCompleted:
		return &api.Error{
			Status: http.StatusConflict, Code: api.CodeIdempotencyKeyInProgress,
			Message: "a request with this Idempotency-Key is still in progress",
			Hint:    "wait for it to finish, then retry with the same key to get its answer",
		}
	}
	if old.ContentType != "" {
		w.Header().Set("Content-Type", old.ContentType)
	}
	w.Header().Set(api.HeaderIdempotentReplayed, "true")
	w.WriteHeader(old.Status)
	_, _ = w.Write(old.Body)
	return nil
}

// captureWriter passes an answer through and keeps a copy of it, up to
// maxReplayBody.
type Capture struct {
	http.ResponseWriter
	Status   int
	Body     bytes.Buffer
	Overflow bool
}

func (c *Capture) WriteHeader(code int) {
	if c.Status == 0 {
		c.Status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *Capture) Write(p []byte) (int, error) {
	if c.Status == 0 {
		c.Status = http.StatusOK
	}
	if !c.Overflow {
		if c.Body.Len()+len(p) > maxReplayBody {
			c.Overflow = true
			c.Body = bytes.Buffer{}
		} else {
			c.Body.Write(p)
		}
	}
	return c.ResponseWriter.Write(p)
}

// Flush lets a handler that flushes (a long poll) work unchanged.
func (c *Capture) Flush() {
	if c.Status == 0 {
		c.Status = http.StatusOK
	}
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *Capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// SizeRank orders sizes; 0 for an unknown one.
func SizeRank(size string) int {
	switch size {
	case api.SizeSmall:
		return 1
	case api.SizeMedium:
		return 2
	case api.SizeLarge:
		return 3
	}
	return 0
}

// MonthStart is the first instant of t's calendar month, UTC.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// LimitError is a fair-use refusal: 429 in the normal envelope. The
// messages state the limit; they never mention plans or money.
func LimitError(code, msg, hint string, details map[string]any) *api.Error {
	return &api.Error{Status: http.StatusTooManyRequests, Code: code, Message: msg, Hint: hint, Details: details}
}

// RoundHours keeps usage figures readable: 3 decimals is 3.6 s.
func RoundHours(h float64) float64 { return math.Round(h*1000) / 1000 }
