// Package status serves what the server reports about itself and about
// the caller's use of it: liveness and readiness (/health,
// /health/ready), the Prometheus metrics (/metrics), the account's usage
// against the fair-use limits (/v1/usage) and, for admin keys, the host's
// use of its limits (/v1/host). It reads; the limits themselves are
// enforced by the sandbox lifecycle and the capacity driver.
package status
