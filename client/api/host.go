package api

import "time"

// HostStatus is the answer of GET /v1/host (admin keys): the host's use
// of its own limits as the server accounts for them, whether the server
// accepts audited work, and the disk use of the caller's active
// sandboxes. `boxkite status`, `boxkite doctor` and the TUI show it.
type HostStatus struct {
	Driver string `json:"driver"`
	// Audit says whether audited operations are accepted: false while
	// the audit log cannot be written (the server fails closed).
	Audit HostAudit `json:"audit"`
	// Disk is the filesystem sandbox disks and volumes live on, with the
	// free-space watermark; nil for drivers without host disks (kube).
	Disk *HostDisk `json:"disk,omitempty"`
	// Limits are the host's other limits: threads, loop devices, memory.
	Limits []HostLimit `json:"limits"`
	// Sandboxes are the caller's active sandboxes with their disk use.
	Sandboxes []SandboxDisk `json:"sandboxes"`
	// SidecarProtocol is the sidecar protocol version this server speaks
	// (SidecarProtocol of its build); 0 from a server older than the field.
	SidecarProtocol int `json:"sidecar_protocol"`
	// OlderSidecars are the caller's active sandboxes whose sidecar last
	// stated an older protocol than SidecarProtocol: started before an
	// upgrade, they lack what newer sidecars do (docs/architecture.md,
	// "Sidecar protocol versions") until forked.
	OlderSidecars []SandboxSidecar `json:"older_sidecars"`
}

// SandboxSidecar is a sandbox and the sidecar protocol version its
// sidecar stated (HeaderSidecarProtocol; 0 for one that states none).
type SandboxSidecar struct {
	ID              string `json:"id"`
	Label           string `json:"label,omitempty"`
	SidecarProtocol int    `json:"sidecar_protocol"`
}

// HostAudit is the audit log's state.
type HostAudit struct {
	Writable bool       `json:"writable"`
	Reason   string     `json:"reason,omitempty"` // why not
	Since    *time.Time `json:"since,omitempty"`
}

// HostDisk is the host filesystem of sandbox disks and volumes, or, with
// the local driver's clone pool, the pool (Path its mount point) when it
// has less room above its watermark than the host: the one that binds.
// Below WatermarkBytes free, creates and uploads answer 507
// insufficient_storage; below FreezeBelowBytes, running sandboxes are
// frozen until space is freed.
type HostDisk struct {
	Path             string `json:"path"`
	TotalBytes       int64  `json:"total_bytes"`
	FreeBytes        int64  `json:"free_bytes"`
	WatermarkBytes   int64  `json:"watermark_bytes"`
	FreezeBelowBytes int64  `json:"freeze_below_bytes"`
	Refusing         bool   `json:"refusing"` // below the watermark now
}

// HostLimit is one host limit: Used of Limit, creates refused once a new
// sandbox would take Used past RefuseAt.
type HostLimit struct {
	Resource string `json:"resource"` // HostThreads, HostLoopDevices, HostMemory, SandboxThreads
	Unit     string `json:"unit"`     // "count" or "bytes"
	Used     int64  `json:"used"`
	Limit    int64  `json:"limit"`
	RefuseAt int64  `json:"refuse_at"`
	Refusing bool   `json:"refusing"`
	Hint     string `json:"hint,omitempty"` // what to raise, and how
}

// Resources of HostLimit and of host_capacity refusals' details.
const (
	HostDiskResource = "disk"            // bytes of the host filesystem (507 insufficient_storage)
	HostThreads      = "threads"         // the host's tasks against pid_max and threads-max
	HostLoopDevices  = "loop_devices"    // loop devices in use against those the kernel can make
	HostMemory       = "memory"          // bytes of memory in use against MemTotal (MemAvailable)
	SandboxThreads   = "sandbox_threads" // tasks of this server's sandboxes, against a configured cap
	HostIDRanges     = "id_ranges"       // host uid/gid ranges leased, one per sandbox, warm pool member and image build (local driver as root)
	HeldOutput       = "held_output"     // bytes of JSON exec answers the server holds in memory until audited (an exec's refusal, not a create's)
)

// SandboxDisk is one sandbox's disk use: its own filesystem (the local
// driver's loop-mounted image), which the host backs only as it fills.
type SandboxDisk struct {
	ID         string `json:"id"`
	Label      string `json:"label,omitempty"`
	UsedBytes  int64  `json:"used_bytes"`
	QuotaBytes int64  `json:"quota_bytes"`
	Frozen     bool   `json:"frozen,omitempty"` // stopped while a disk is out of space
	// FrozenReason is which disk (FrozenHostDisk, FrozenClonePool).
	FrozenReason string `json:"frozen_reason,omitempty"`
}
