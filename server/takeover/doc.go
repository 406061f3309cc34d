// Package takeover lets a person use a sandbox's terminal: the PTY
// WebSocket relay with its audited typed input and optional asciicast
// recordings, the single-use takeover tokens an admin key (or, through
// boxkite-bastion, a registered SSH key) mints, and the credential checks
// the guard runs for routes that take such a token or the bastion's key.
package takeover
