// Package idrange leases host id ranges for the local driver. As root,
// every sandbox gets a range of jail.IDRange (65536) host uids and gids of
// its own, so that what the kernel counts per user (inotify instances and watches, pipe buffers, in-flight SCM_RIGHTS
// descriptors, epoll watches, processes, pending signals) is counted per
// sandbox. The ranges are laid out from Config.IDRangeFirst, one after
// another, Config.IDRangeCount of them, and leased host-wide: a range is
// taken while some process holds an exclusive flock on its lease file,
// Config.IDRangeDir/<first host id>. The driver takes the lock, hands the
// locked file to the jail's init, which holds it as long as it lives, and
// lets go of its own copy; so every boxkite server of the host (and every
// test run in parallel) sees the same leases, a range is free again the
// moment its jail is gone, whoever or whatever killed it, and a restarted
// server finds the range of each sandbox it adopts in state.json. Lease
// files are never removed: unlinking a file another process may be about
// to lock would let two processes lock two files of one name.
//
// Ranges overlapping ids the host hands out (/etc/subuid and /etc/subgid
// ranges of real users, /etc/passwd and /etc/group ids) are never leased:
// a user whose rootless containers ran as a sandbox's ids could signal its
// processes and would share its counters.
//
// Data at rest is not owned by any of these ranges: see jail.Start's
// idmapped mounts. Files hold the ids the sandbox sees (canonical ids), so
// a range can go to any sandbox and data to any range.
package idrange
