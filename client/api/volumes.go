package api

import "time"

// Volume statuses. The local driver makes a volume synchronously, so a
// created volume is ready at once.
const (
	VolumeReady = "ready"
)

// CodeVolumeInUse answers a DELETE of a volume an active sandbox mounts.
const CodeVolumeInUse = "volume_in_use"

// CodeMCPConnectionNotFound answers a create naming an unknown MCP connection.
const CodeMCPConnectionNotFound = "mcp_connection_not_found"

// DefaultVolumeLimit is how many volumes an account may keep (the
// reference's): each holds a loop device and a mount on the host, which
// every tenant's creates need too.
const DefaultVolumeLimit = 10

// CreateVolumeRequest is the body of POST /v1/volumes.
type CreateVolumeRequest struct {
	Label  string  `json:"label,omitempty"`
	SizeGB float64 `json:"size_gb,omitempty"` // 0 (left out) means 1; the server refuses an explicit 0
}

// Volume is persistent storage that outlives the sandboxes mounting it
// (CreateSandboxRequest.VolumeMounts).
type Volume struct {
	ID        string    `json:"id"`
	Label     string    `json:"label"`
	SizeGB    float64   `json:"size_gb"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
}
