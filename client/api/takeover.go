package api

import "time"

// TakeoverTokenTTL is how long a takeover token is valid, as in the
// reference. A token opens one takeover (or one bastion exec), once.
const TakeoverTokenTTL = 30 * time.Second

// CloseSandboxEnded is the WebSocket close status of a takeover or an
// interactive exec whose sandbox was destroyed, expired or lost under it,
// or of an interactive exec whose sandbox was paused under it ("sandbox
// <id> was paused while the command ran"); the close reason says which.
// A shell that exits closes normally.
const CloseSandboxEnded = 4410

// TakeoverTokenRequest is the optional body of
// POST /v1/sandboxes/{id}/takeover-token.
type TakeoverTokenRequest struct {
	ReadOnly bool `json:"read_only,omitempty"` // the token only watches
}

// TakeoverToken is a single-use credential for WS …/takeover?token= and
// the SSH bastion's password prompt.
type TakeoverToken struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	ReadOnly  bool      `json:"read_only"`
}

// BastionTokenRequest is the body of POST /v1/bastion/takeover-token: the
// bastion, authenticated by the server's bastion key, asks for a takeover
// token on behalf of a person who proved they hold the private half of
// PublicKey, or who typed Token as their password. A Token is spent and
// the answer carries the same grant in a fresh token, so the bastion
// learns at the password prompt whether it is good.
type BastionTokenRequest struct {
	SandboxID string `json:"sandbox_id"`
	PublicKey string `json:"public_key,omitempty"` // authorized_keys format
	Token     string `json:"token,omitempty"`      // a takeover token
}
