// Package exec runs commands in sandboxes: POST …/exec, whose answer (a
// JSON result, or NDJSON events streamed as they come) is proxied from the
// sandbox's sidecar, scrubbed of secrets, held back at its end until the
// audit entry is committed, and survives the revocation of its caller's
// credential; and the interactive exec WebSocket (a command or the sftp
// subsystem with streamed stdin, on a PTY or pipes).
package exec
