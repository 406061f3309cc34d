// Package sidecar is the control plane's side of the sandboxes' sidecars:
// one HTTP client per sandbox over its endpoint (a unix socket, or TLS
// pinned to the sidecar's certificate; Clients), the description of one
// proxied call and what it captured (Call), the calls in flight per
// sandbox, so they can be ended when a sandbox freezes or is destroyed
// (Calls), and handing a stream over to a background reader when its
// client's credential is revoked.
package sidecar
