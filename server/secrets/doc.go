// Package secrets is the control plane's secrets broker (issue 23): the
// accounts' secrets, kept envelope-encrypted (a data key per secret, wrapped
// by the server's key, Keyring), and the HTTP requests the control plane
// makes on a sandbox's behalf with {{secret:NAME}} replaced by a secret's
// value (Broker). A value is never shown again once written, never enters a
// sandbox, leaves the server only over https to port 443 of its secret's
// allowed hosts, and is redacted from what the broker answers.
//
// The package reaches its records through its own Store (server/sqlstore
// implements it) and is wired into the control plane by
// cmd/boxkite-server; the server root serves its routes through Handlers.
package secrets
