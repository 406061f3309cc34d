// Package sandbox is the sandbox lifecycle service, the hub of the control
// plane: creating sandboxes (validation, fair-use limits, the host's
// capacity, the driver, their egress), listing, extending, pausing,
// resuming and destroying them; loading the {id} sandbox of a request for
// the other subsystems; the background work on them (reconciling with the
// driver at start, the reaper of expired and long-paused sandboxes, lost
// and frozen sandboxes); and each sandbox's usage (stats). Its routes are
// in routes.go; what it needs of the rest of the control plane is Deps.
package sandbox
