// Package jail builds the sandbox around boxkite-sidecar on Linux: user,
// mount, PID, network, IPC, UTS and cgroup namespaces, a read-only root with
// writable /workspace and /tmp, pivot_root, no capabilities, no_new_privs and
// seccomp. It imports nothing else of boxkite.
package jail
