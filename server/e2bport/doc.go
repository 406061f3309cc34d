// Package e2bport is the control plane as the E2B facade (server/e2b)
// consumes it: e2b.ControlPlane, in its three parts. Auth resolves API
// keys for the facade's requests (recording the caller, so what follows
// is authorized as on /v1), derives the envd token key and says which
// keys are still valid; Lifecycle creates, lists, pauses, resumes,
// snapshots, forks and destroys sandboxes through the lifecycle hub
// (server/sandbox) and the snapshot service (server/snapshot), so an E2B
// create is validated, limited and admitted against the host exactly as
// POST /v1/sandboxes; Sessions opens a running sandbox for envd's calls
// (the allowlist, the sidecar, revocation, the audit log). The server
// root only wires it (Deps).
package e2bport
