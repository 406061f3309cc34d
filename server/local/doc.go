//go:build linux

// Package local implements model.Driver on Linux namespaces: each sandbox is
// one jailed boxkite-sidecar process (see sidecar/jail) reached over a unix
// socket.
//
// Each sandbox lives in StateDir/sandboxes/<id>:
//
//	disk.img             sparse ext4 image, the storage quota (loop storage only)
//	disk/                its loop mount (nosuid,nodev):
//	disk/workspace/      → /workspace in the jail, idmapped; owned by the sandbox user's canonical id 1001
//	disk/outputs/        → /mnt/user-data/outputs; likewise
//	run/                 → /run/boxkite, read-only; the server's, group the jail's root, 0750; holds egress.sock if granted
//	sidecar.sock         the sidecar's listening socket: made by the server, handed to the jail as a descriptor (sockets.go)
//	sidecar.log          the jail's stdout and stderr
//	state.json           {"pid","start_time","socket","token","cgroup","host_id_base"}, 0600
//
// StateDir/pool/warm-<hex> holds the warm pool (Config.WarmPool, pool.go):
// jails of the default size and storage started ahead of need, laid out
// like a sandbox, whose sidecar holds a pool token until Create claims
// one: it moves to sandboxes/<id> and gets a fresh token. List does not
// report pool members; Shutdown and the next New delete them.
// StateDir/pool/prep-<hex> holds the prepared pool (Config.Prepared,
// prepared.go): a cold create's id range lease, run dir, mounted disk and
// cgroups, made ahead with no jail; a cold create of the default size and
// storage moves one to sandboxes/<id> and starts its jail there.
//
// With the clone pool (Config.Clones, cow.go), sandboxes/, pool/ and
// images/ live in StateDir/cow, a loop-mounted XFS with reflinks backed by
// StateDir/cow.img, with snapshots/ beside them (snapshot.go); disks,
// snapshots and forks are then FICLONE copies. Paths below say StateDir
// for either. A start finds the sandboxes an earlier one left in the
// other of the two (with or without the pool) and keeps them there.
//
// StateDir/images holds one formatted template image per quota size, copied
// (its few MiB of metadata) for each new disk; the images, loop devices,
// mounts and the clone pool's trim are server/local/loopdisk's. Without root or loop devices
// the quota is a tmpfs inside the jail instead (Config.Storage), which keeps
// /workspace in memory and nothing of it on the host.
//
// As root, each sandbox also gets cgroup limits for its size preset (memory,
// CPU, pids) in boxkite/<id>.<hash of StateDir> under the driver's own
// cgroup of every hierarchy; the jail's init joins them before it runs.
// state.json records the directories, so a restarted driver, whatever its
// own cgroup, removes the right ones.
//
// The jail is its own session and survives the driver's process: a new
// Driver on the same StateDir finds it with List (alive means the pid still
// has the recorded start time) and can Delete it. state.json keeps the token
// so List can return whole endpoints; reading it takes the same access as
// reading the socket.
//
// As root, jails are cloned by a helper process, the sidecar binary run as
// `boxkite-sidecar spawner` and started with the driver (jail.Spawner):
// a jail's new user namespace rules out a vfork, so a clone from the
// server would copy the server's page tables under its mmap lock and
// leave its pages copy-on-write. The helper clones with CLONE_PARENT, so
// each jail is still the driver's child: waited for, killed and adopted
// after a restart as before. It ends when the driver's end of its socket
// closes.
//
// As root, each jail maps ids 0..65535 to a host id range of its own,
// leased host-wide (server/local/idrange, Config.IDRange*) for as long as the jail
// lives, so the jail's root is an unprivileged host user, per-user kernel
// counters are per sandbox, and the jail's user namespace is owned by the
// range's base uid (jail.Start). Data at rest (workspace, outputs,
// volumes) holds canonical ids, the ids the sandbox sees, and each jail
// reaches it through idmapped mounts; volumes made before per-sandbox
// ranges are moved to canonical ids when first mounted (idmigrate.go).
// docs/security.md has the layout and the scheme. Without root, the jail
// maps only the caller's ids and commands reach uid 1001 through a nested
// user namespace.
//
// Linux only, through and through (namespaces, cgroups, loop mounts,
// idmapped mounts): every file is constrained to linux, so the package is
// left out of darwin builds deliberately rather than failing them; nothing
// released for darwin imports it (TestLinuxOnlyPackages). Its idrange
// package is portable and stays in.
package local
