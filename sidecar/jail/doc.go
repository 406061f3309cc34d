// Package jail builds the sandbox around boxkite-sidecar on Linux: user,
// mount, PID, network, IPC, UTS and cgroup namespaces, a read-only root with
// writable /workspace and /tmp, masked /proc files, pivot_root (or, for a
// Spawner's jails, MS_MOVE and chroot over its skeleton root), lowered
// rlimits, a minimal capability set, no_new_privs and a seccomp filter. Its
// Cgroups type makes the per-sandbox cgroups (v2, or v1 controllers) the
// driver places the jail's init in before it runs. Start is the driver's
// half, Setup, Lockdown and Init the jail's; with a host id range
// (Spec.HostIDBase) Start makes the user namespace owned by the range's
// base uid and idmaps the writable data mounts through it, so data at rest
// keeps the ids the sandbox sees. A Build spec makes the same
// jail run an image build's steps instead of the sidecar; MappingUserNS
// and IDMappedClone make the idmapped mounts its root is built from. It
// imports nothing else of boxkite.
package jail
