// Package sidecar is the agent inside every sandbox: it runs commands, moves
// files and serves a PTY for the control plane, its only client. Keep it small:
// the standard library, client/api, a pty and a websocket package only.
package sidecar
