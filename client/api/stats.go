package api

// SandboxStats is the answer of GET /v1/sandboxes/{id}/stats: what the
// sandbox holds on its host right now, from the driver's accounting (the
// local driver reads the sandbox's cgroup).
type SandboxStats struct {
	// MemoryBytes is all memory charged to the sandbox: its processes'
	// anonymous memory, the page cache they brought in and kernel memory.
	MemoryBytes int64 `json:"memory_bytes"`
	// MemoryAnonBytes is the anonymous part (heaps, stacks): memory no
	// other sandbox shares.
	MemoryAnonBytes int64 `json:"memory_anon_bytes"`
	// Pids counts its tasks, threads included.
	Pids int64 `json:"pids"`
	// DiskUsedBytes and DiskQuotaBytes are its own disk's use and size
	// (drivers with per-sandbox disks; 0 otherwise).
	DiskUsedBytes  int64 `json:"disk_used_bytes,omitempty"`
	DiskQuotaBytes int64 `json:"disk_quota_bytes,omitempty"`
	// Frozen says the sandbox is stopped because a disk ran low, and
	// FrozenReason which one (FrozenHostDisk, FrozenClonePool).
	Frozen       bool   `json:"frozen,omitempty"`
	FrozenReason string `json:"frozen_reason,omitempty"`
}

// SidecarUsage is a sidecar's answer to GET /usage: what its sandbox's
// processes hold and used, read from the cgroup the sidecar runs in (a
// kube pod's container). The kube driver's Stats (sidecar protocol 2).
type SidecarUsage struct {
	MemoryBytes     int64 `json:"memory_bytes"`      // all memory charged: anonymous, page cache, kernel
	MemoryAnonBytes int64 `json:"memory_anon_bytes"` // of which anonymous
	Pids            int64 `json:"pids"`              // tasks, threads included; 0 without the pids controller
	CPUMicros       int64 `json:"cpu_micros"`        // CPU time used so far, in µs; 0 without CPU accounting
	// OOMKills counts the processes the kernel's OOM killer killed in the
	// cgroup at its memory limit since it was made (oom_kill of
	// memory.events, or of memory.oom_control on cgroup v1): the kube
	// driver's model.MemoryKillDriver. 0 from a sidecar that predates it.
	OOMKills int64 `json:"oom_kills"`
}
