// Package local implements server.Driver on Linux namespaces: each sandbox is
// one jailed boxkite-sidecar process (see sidecar/jail) reached over a unix
// socket.
//
// Each sandbox lives in StateDir/sandboxes/<id>:
//
//	workspace/   → /workspace in the jail; owned by the sandbox user (host uid base+1001 as root)
//	outputs/     → /mnt/user-data/outputs; likewise
//	run/         → /run/boxkite; 0700, owned by the jail's root; holds sidecar.sock
//	sidecar.log  the jail's stdout and stderr
//	state.json   {"pid","start_time","socket","token"}, 0600
//
// The jail is its own session and survives the driver's process: a new
// Driver on the same StateDir finds it with List (alive means the pid still
// has the recorded start time) and can Delete it. state.json keeps the token
// so List can return whole endpoints; reading it takes the same access as
// reading the socket.
//
// As root, each jail maps ids 0..65535 to host ids starting at
// Config.UIDBase, so the jail's root is an unprivileged host user. Without
// root, the jail maps only the caller's ids and commands reach uid 1001
// through a nested user namespace.
package local
