// Package local implements server.Driver on Linux namespaces: each sandbox is
// one jailed boxkite-sidecar process reached over a unix socket.
package local
