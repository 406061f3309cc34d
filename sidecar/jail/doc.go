// Package jail builds the sandbox around boxkite-sidecar on Linux: user,
// mount, PID, network, IPC, UTS and cgroup namespaces, a read-only root with
// writable /workspace and /tmp, pivot_root, a minimal capability set and
// no_new_privs (cgroup limits and seccomp join in Lockdown later). Start is
// the driver's half, Setup, Lockdown and Init the jail's. It imports nothing
// else of boxkite.
package jail
