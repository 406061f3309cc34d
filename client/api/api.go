// Package api holds the wire types of the boxkite control-plane and sidecar
// HTTP APIs: requests, responses, stream events and the error envelope.
//
// It is a leaf: it imports only the standard library, so every other package
// (client, server, sidecar, tools, tui, handoff) can share it. Together with
// package client it is the supported, stable Go API of boxkite.
package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// HeaderSidecarToken carries a sandbox's sidecar token on every request
// the control plane makes to that sandbox's sidecar but GET /health; the
// sidecar refuses a wrong one (401 sidecar_auth). The control plane never
// passes a client's on, nor the sidecar's back (a preview's answer).
const HeaderSidecarToken = "X-Sidecar-Auth-Token"

// HeaderSidecarHostFlush, set to "1" by the control plane on a file write
// (PUT /files/raw, POST /file-create, /str-replace, /files/archive), says
// that the host flushes the sandbox's disk beside the write's audit entry
// before the answer reaches the client: the sidecar then writes the data
// out and renames, without fsyncing (docs/files.md, "Durability and full
// disks"). Without it the sidecar makes the write durable itself.
const HeaderSidecarHostFlush = "X-Sidecar-Host-Flush"

// HeaderSidecarProtocol is set by a sidecar on every answer but a
// preview's (an app's own): the version of the protocol between the
// control plane and the sidecar that it speaks, SidecarProtocol of its
// build. A sidecar without it predates version 1. An upgraded control
// plane meets older sidecars (a sandbox outlives a server restart; a kube
// pod keeps its image), and before it uses what a later version added it
// either falls back or refuses (docs/architecture.md, "Sidecar protocol
// versions").
const HeaderSidecarProtocol = "X-Sidecar-Protocol"

// SidecarProtocol is the version of the sidecar protocol this build
// speaks. Raise it when the sidecar learns a frame, field, header or route
// the control plane will send it, and add the feature's row to the table
// in docs/architecture.md.
const SidecarProtocol = 2

// SidecarProtocolOf is the protocol version a sidecar's answer states
// (HeaderSidecarProtocol): 0 when it states none or no number.
func SidecarProtocolOf(h http.Header) int {
	v := h.Get(HeaderSidecarProtocol)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Health is the body of GET /health on the control plane and on a sidecar.
type Health struct {
	Status  string `json:"status"`            // "healthy" or "ready"
	Version string `json:"version,omitempty"` // build version of the answering binary
}

// Sandbox sizes accepted in CreateSandboxRequest.Size.
const (
	SizeSmall  = "small"
	SizeMedium = "medium"
	SizeLarge  = "large"
)

// Sandbox statuses reported in Sandbox.Status.
const (
	StatusActive    = "active"    // the sidecar answers; operations are accepted
	StatusDestroyed = "destroyed" // deleted by a user or by the reaper
	StatusLost      = "lost"      // the substrate lost it (host restart, process died)
	StatusPaused    = "paused"    // paused (Sandbox.PausedWith); resume gives it back as it was
)

// Pause modes, in PauseSandboxRequest.Mode and Sandbox.PausedWith.
const (
	// PauseFreeze stops every process at once through the freezer cgroup;
	// memory stays, and resume continues exactly where it stopped. The
	// default.
	PauseFreeze = "freeze"
	// PauseFilesystem ends the processes and releases their memory,
	// keeping the filesystem; resume starts the sandbox again from it,
	// restarting the background processes started with restart set.
	PauseFilesystem = "filesystem"
	// PauseCheckpoint keeps memory on disk with CRIU, only where `criu
	// check` passes.
	PauseCheckpoint = "checkpoint"
)

// PauseSandboxRequest is the body of POST /v1/sandboxes/{id}/pause.
type PauseSandboxRequest struct {
	Mode string `json:"mode,omitempty"` // PauseFreeze (default), PauseFilesystem, PauseCheckpoint
}

// CreateSandboxRequest is the body of POST /v1/sandboxes.
type CreateSandboxRequest struct {
	Label              string            `json:"label,omitempty"`
	Size               string            `json:"size,omitempty"` // small (default), medium, large
	StorageGB          float64           `json:"storage_gb,omitempty"`
	LifetimeMinutes    int               `json:"lifetime_minutes,omitempty"` // 0 means the server default
	Count              int               `json:"count,omitempty"`            // 1..10; >1 makes the response an array
	ImageID            string            `json:"image_id,omitempty"`
	VolumeMounts       map[string]string `json:"volume_mounts,omitempty"` // volume id → absolute mount path
	MCPConnectionNames []string          `json:"mcp_connection_names,omitempty"`
	// EgressHosts grants the sandbox egress, through the server's proxy,
	// to each "host" (port 443) or "host:port"; admin keys only, at most
	// MaxEgressHosts. A coding agent handed off into the sandbox reaches
	// its model API so.
	EgressHosts []string `json:"egress_hosts,omitempty"`
	// AutoPause pauses the sandbox when its lifetime ends instead of
	// destroying it (mode filesystem where the server can, else freeze);
	// resume gives it a fresh lifetime. A paused sandbox is destroyed after
	// the server's paused retention (docs/snapshots.md).
	AutoPause   bool     `json:"auto_pause,omitempty"`
	SecretNames []string `json:"secret_names,omitempty"`
}

// MaxEgressHosts bounds CreateSandboxRequest.EgressHosts.
const MaxEgressHosts = 20

// Sandbox is how the API shows one sandbox (SandboxSessionOut in the reference).
type Sandbox struct {
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	Label           string     `json:"label,omitempty"`
	Size            string     `json:"size"`
	StorageGB       float64    `json:"storage_gb,omitempty"`
	LifetimeMinutes int        `json:"lifetime_minutes"`
	CreatedAt       time.Time  `json:"created_at"`
	ExpiresAt       time.Time  `json:"expires_at"`
	DestroyedAt     *time.Time `json:"destroyed_at"`
	DestroyReason   string     `json:"destroy_reason,omitempty"` // "deleted", "expired", "lost"
	// PausedWith is the pause mode of a paused sandbox, and PausedAt
	// since when; while paused its lifetime does not run (ExpiresAt moves
	// on by the time paused at resume).
	PausedWith string     `json:"paused_with,omitempty"`
	PausedAt   *time.Time `json:"paused_at,omitempty"`
	AutoPause  bool       `json:"auto_pause,omitempty"` // paused, not destroyed, when its lifetime ends
	// SidecarProtocol is the sidecar protocol version (SidecarProtocol,
	// HeaderSidecarProtocol) the sandbox's sidecar stated to the server
	// that answered, in GET /v1/sandboxes/{id} only: below the server's,
	// the sandbox runs an older sidecar (started before the server was
	// upgraded), which does not serve the newer routes. Absent when that
	// server has not heard from the sidecar (a sandbox that is not
	// running, or another replica's).
	SidecarProtocol *int `json:"sidecar_protocol,omitempty"`
	// FrozenReason says why a running sandbox is frozen (FrozenHostDisk,
	// FrozenClonePool): its processes are stopped and calls to it answer
	// 507 insufficient_storage until there is room again, when it thaws
	// by itself. Empty when it is not frozen. Only the local driver
	// freezes; as sidecar_protocol, what the server that answered knows.
	FrozenReason string `json:"frozen_reason,omitempty"`
}

// Values of FrozenReason (Sandbox, SandboxStats, SandboxDisk): which
// filesystem ran low. Stable: clients branch on them.
const (
	// FrozenHostDisk: the host's filesystem of sandbox disks and volumes
	// fell below half its free-space watermark.
	FrozenHostDisk = "host_disk"
	// FrozenClonePool: the local driver's clone pool, which holds the
	// sandboxes' disks, fell below half its watermark (the host had room).
	FrozenClonePool = "clone_pool"
)

// ResumeResult is the answer to POST /v1/sandboxes/{id}/resume: the
// sandbox, and after a filesystem pause what became of the background
// processes that ran when it was paused.
type ResumeResult struct {
	Sandbox
	Processes []ResumedProcess `json:"processes,omitempty"`
}

// ExtendSandboxRequest is the body of POST /v1/sandboxes/{id}/extend.
type ExtendSandboxRequest struct {
	LifetimeMinutes int `json:"lifetime_minutes"`
}

// Exec timeouts, in seconds, identical through every layer.
const (
	DefaultExecTimeout = 30
	MaxExecTimeout     = 3600
)

// Output caps of exec, per stream (stdout and stderr each). Output past
// the cap is dropped and counted, and the command runs on (see
// ExecRequest.OnOutputLimit); the result says so (ExecResult.Truncated).
const (
	DefaultExecOutput = 1 << 20 // max_output_bytes when a request leaves it out
	// MaxExecOutput is the largest max_output_bytes the sidecar takes; a
	// control plane may set a lower maximum of its own.
	MaxExecOutput = 64 << 20
)

// Values of ExecRequest.OnOutputLimit and ExecResult.StopReason.
const (
	OutputLimitTruncate   = "truncate"     // drop output past the cap, let the command run on (the default)
	OutputLimitStop       = "stop"         // kill the command when a stream passes the cap
	StopReasonOutputLimit = "output_limit" // the command was killed because OnOutputLimit was "stop"
	StopReasonTimeout     = "timeout"      // the command was killed at its timeout (exit code ExitCodeTimeout)
	// StopReasonMemoryLimit: the command ended killed (exit code
	// ExitCodeKilled) while the kernel killed a process of the sandbox at
	// its memory limit (the local driver tells; a larger size raises it).
	StopReasonMemoryLimit = "memory_limit"
)

// ExitCodeKilled is the exit code of a command killed by SIGKILL (128+9),
// the OOM killer's signal.
const ExitCodeKilled = 137

// ExitCodeTimeout is the exit code reported when a command exceeds its timeout.
const ExitCodeTimeout = 124

// ExecRequest is the body of POST /v1/sandboxes/{id}/exec and of the sidecar's /exec.
type ExecRequest struct {
	Command     string            `json:"command"`
	Timeout     int               `json:"timeout,omitempty"` // seconds, 1..3600; 0 in a request means the default
	Description string            `json:"description,omitempty"`
	Stdin       string            `json:"stdin,omitempty" nul:"allow"` // data, not text: may hold NUL
	Cwd         string            `json:"cwd,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	// MaxOutputBytes caps what is kept of each stream; 0 means
	// DefaultExecOutput, at most the server's maximum.
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
	// OnOutputLimit is OutputLimitTruncate (the default, "") or OutputLimitStop.
	OnOutputLimit string `json:"on_output_limit,omitempty"`
	// SecretEnv sets environment variables (name → secret name) to the
	// values of the sandbox's secrets, for this command only: the weaker
	// mode of docs/secrets.md, off unless the server allows it. The
	// values are redacted from the JSON result; streaming is refused.
	SecretEnv map[string]string `json:"secret_env,omitempty"`
}

// HeaderExecID names a streamed exec (Accept: application/x-ndjson) while
// it runs: the answer's headers carry it, and POST
// /v1/sandboxes/{id}/exec/{exec_id}/signal sends its process group a
// signal (what `boxkite exec` does with Ctrl-C). A sidecar older than it
// sends none.
const HeaderExecID = "X-Exec-Id"

// Signals an exec may be sent (ExecSignalRequest.Signal).
const (
	SignalINT  = "SIGINT"
	SignalTERM = "SIGTERM"
	SignalHUP  = "SIGHUP"
	SignalKILL = "SIGKILL"
)

// ExecSignalRequest is the body of POST …/exec/{exec_id}/signal.
type ExecSignalRequest struct {
	Signal string `json:"signal"` // SIGINT, SIGTERM, SIGHUP or SIGKILL
}

// ExecSignalResult answers it: the signal was sent to the command's
// process group; how the command takes it shows in its exec's exit event.
type ExecSignalResult struct {
	ExecID string `json:"exec_id"`
	Signal string `json:"signal"`
}

// ExecResult is the JSON (non-streaming) answer to an exec.
type ExecResult struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS int64  `json:"duration_ms"`
	ExecOutputInfo
}

// ExecOutputInfo says how much output an exec wrote and whether some was
// dropped; an exec result and a stream's exit event both carry it.
type ExecOutputInfo struct {
	// Truncated is set when a stream wrote more than OutputLimitBytes and
	// the rest was dropped.
	Truncated bool `json:"truncated"`
	// StdoutBytes and StderrBytes count what the command wrote to each
	// stream, dropped bytes included.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	// OutputLimitBytes is the cap that applied to each stream.
	OutputLimitBytes int64 `json:"output_limit_bytes"`
	// StopReason says why the sandbox killed the command: StopReasonTimeout
	// at its timeout, StopReasonOutputLimit at the cap because the request
	// asked for that, StopReasonMemoryLimit at the sandbox's memory limit;
	// "" when it ended by itself (a command may exit 124 on its own: only
	// StopReasonTimeout says it timed out; a kill -9 exits 137 without
	// StopReasonMemoryLimit).
	StopReason string `json:"stop_reason,omitempty"`
}

// ContentTypeNDJSON is the Accept value that turns an exec into a stream of ExecEvents.
const ContentTypeNDJSON = "application/x-ndjson"

// Exec stream event types.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventExit   = "exit"
	EventError  = "error" // the stream failed after it started; Error is set
)

// ExecEvent is one line of a streamed exec (Accept: application/x-ndjson).
// A stream is stdout/stderr events as output happens, ending with one exit
// event, or, when it broke after it started (the sandbox's sidecar died),
// with one error event carrying the error envelope's content:
// {"type":"error","error":{"code":"sandbox_lost",…}}.
type ExecEvent struct {
	Type       string `json:"type"`
	Data       string `json:"data,omitempty"`
	ExitCode   int    `json:"exit_code,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	Error      *Error `json:"error,omitempty"`
	// ExecOutputInfo is set on the exit event only.
	ExecOutputInfo
}

// MarshalJSON writes exit_code, duration_ms and the output counts on exit
// events even when zero (exit code 0 matters) and leaves them out of
// output and error events.
func (e ExecEvent) MarshalJSON() ([]byte, error) {
	if e.Type != EventExit {
		return json.Marshal(struct {
			Type  string `json:"type"`
			Data  string `json:"data,omitempty"`
			Error *Error `json:"error,omitempty"`
		}{e.Type, e.Data, e.Error})
	}
	return json.Marshal(struct {
		Type       string `json:"type"`
		ExitCode   int    `json:"exit_code"`
		DurationMS int64  `json:"duration_ms"`
		ExecOutputInfo
	}{e.Type, e.ExitCode, e.DurationMS, e.ExecOutputInfo})
}
