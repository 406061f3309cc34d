// Package proxy is the control plane's reverse proxy to each sandbox's
// sidecar: Forward sends one call and copies the answer back unbuffered
// (exec uses it too), and the proxied file, process, interpreter and LSP
// routes under /v1/sandboxes/{id} (routes.go) pass their requests through
// unchanged, check what they must to pick the route (ids, ?path=, the
// account's allowlist), scrub command output, and write the audit entry of
// each operation that succeeded before the end of its answer.
package proxy
