// Package limits holds the mechanics of the control plane's limits: the
// per-bucket request rate limiter (RateLimiter, fixed one-minute windows
// per subject) and the client address it counts unauthenticated requests
// by, the Idempotency-Key checks and the recorder that keeps an answer to
// replay (Capture, Replay), and the fair-use arithmetic of sandbox sizes
// and months. Which routes count against which bucket, the budgets and
// the quotas are the server's configuration.
package limits
