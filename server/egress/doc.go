// Package egress is the host-side proxy through which a sandbox with
// granted egress reaches the network (SECURITY.md boundary 2). It speaks
// HTTP CONNECT and plain-HTTP forwarding on a listener the driver places
// in the sandbox, lets through only the sandbox's granted host:port
// pairs, resolves names itself, refuses addresses that are private,
// loopback, link-local, metadata and the like, dials the address it
// checked (never resolving again), and reports every decision.
package egress
