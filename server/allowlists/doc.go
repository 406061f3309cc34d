// Package allowlists serves the account's command allowlist (GET, PUT
// and DELETE /v1/account/allowed-commands; admin keys change it) and
// enforces it for the subsystems that run commands: exec, the proxied
// process start, and the interpreters' code (CheckCommand,
// CheckBodyCommand). The policy itself is server/internal/allowlist's.
package allowlists
