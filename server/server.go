// Package server is the boxkite control plane: accounts, API keys, sandboxes
// and their lifetimes, the HTTP API of design/API.md, and the reverse proxy to
// each sandbox's sidecar. Storage (Store) and substrates (Driver) are
// interfaces implemented by server/sqlstore, server/local and server/kube and
// wired together in cmd/boxkite-server.
package server
