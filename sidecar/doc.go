// Package sidecar is the agent inside every sandbox: it runs commands, moves
// files and serves a PTY for the control plane, its only client. Keep it small:
// the standard library, client/api, a pty and a websocket package only.
//
// File routes never act on a path twice: a request path is resolved once,
// beneath the descriptor of its typed root (resolve.go, cursor.go), and the
// route then works on descriptors (fsops.go), with the sandbox user's
// filesystem ids (fsuser_linux.go), and answers a write only once it is on
// disk. docs/files.md describes the behaviour; docs/security.md the threat.
package sidecar
