package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// A Driver runs sandboxes on some substrate. server/local (Linux namespaces)
// and server/kube (pods) implement it; the server chooses one in main.
type Driver interface {
	// Create provisions the sandbox and returns once its sidecar answers /health.
	Create(ctx context.Context, spec Spec) (Endpoint, error)
	// Delete tears it down. Deleting a sandbox that is already gone is not an error.
	Delete(ctx context.Context, id string) error
	// List reports what the substrate has, for reconciliation after a restart.
	List(ctx context.Context) ([]Observed, error)
}

// Spec is what a driver needs to create one sandbox.
type Spec struct {
	ID        string        // server-generated, unique; safe as a file or DNS name
	Size      string        // api.SizeSmall, api.SizeMedium, api.SizeLarge
	StorageGB float64       // 0 means the driver default
	Lifetime  time.Duration // how long the control plane keeps it (its reaper ends it)
	// ExpiresAt is the sandbox's expires_at as the control plane
	// recorded it at the create, for a driver that shows it on the
	// substrate (ExpiryRecorder); zero when unknown. The control plane's
	// reaper is the one timer: no driver ends a sandbox at it.
	ExpiresAt time.Time
	// Volumes are mounted read-write at their paths; only a driver that
	// implements VolumeDriver is given any.
	Volumes []VolumeMount
	// Egress, when set, asks the driver for an egress socket in the
	// sandbox (jail.EgressSocketName in its run dir); the driver hands its
	// listener to Egress, which serves it until the driver closes it at
	// Delete. Nil means no network at all.
	Egress func(net.Listener)
	// ImageRoot is the host path of the image's read-only root filesystem
	// (server/images); "" means the host's system dirs.
	ImageRoot string
	// FromSnapshot, when set, is the key of a snapshot (SnapshotDriver)
	// whose filesystem the new sandbox starts from instead of an empty one.
	FromSnapshot string
	// MountPoints are where the sandbox FromSnapshot was taken of had
	// volumes mounted (SnapshotRef.MountPoints): the new sandbox mounts
	// none there, so the driver removes the empty directories its jail
	// made for them, as a fresh sandbox has none.
	MountPoints []string
	// Via, when set, gives the control plane's own client for the
	// sandbox (as WarmClaimer's via): a driver that waits for the new
	// sidecar to answer may ask with via's client for ID, whose kept-alive
	// connection then serves the sandbox's first request (its first exec
	// needs no dial, and the sidecar accepts one connection, not two).
	Via SidecarClients
	// Started, when set, is called by a driver that can (the local one)
	// once the sandbox's process is running and its endpoint is fixed,
	// before the driver waits for the sidecar to answer: with the
	// endpoint Create will return if the sidecar answers. The control
	// plane commits the sandbox's row active meanwhile, so that commit is
	// off the create's path (issue 27), and a request may reach the
	// endpoint from then on: it must accept connections already (the
	// local driver's listener exists before the jail starts, and holds a
	// request in its backlog until the sidecar serves), not refuse them,
	// which the proxy would read as a lost sandbox. A driver calls it at
	// most once and before Create returns, or never; it must not block.
	Started func(Endpoint)
}

// Endpoint is how the control plane reaches a sandbox's sidecar.
type Endpoint struct {
	Network string // "unix" or "tcp"
	Address string // socket path or host:port
	Token   string // presented as api.HeaderSidecarToken on every request
	CertPEM []byte // for tcp: the sidecar's self-signed certificate, pinned
}

// Observed is one sandbox as the substrate reports it.
type Observed struct {
	ID       string
	Endpoint Endpoint
	Alive    bool // the substrate believes the sidecar is running
}

// VolumeDriver is implemented by drivers that can hold volumes. A driver
// without it refuses volume creation with not_supported.
type VolumeDriver interface {
	// CreateVolume makes the volume's storage with a quota of sizeBytes.
	CreateVolume(ctx context.Context, id string, sizeBytes int64) error
	// DeleteVolume removes it and its data; a gone volume is not an error.
	DeleteVolume(ctx context.Context, id string) error
}

// VolumeMount is one volume a driver mounts into a sandbox.
type VolumeMount struct {
	ID   string // the volume's id, as given to VolumeDriver.CreateVolume
	Path string // absolute path inside the sandbox, below volumes.MountRoot (/workspace)
}

// EgressReopener is implemented by drivers whose sandboxes' egress sockets
// can be served again by a new process: ReopenEgress listens on the
// sandbox's socket anew and hands the listener to serve, as Create does
// with Spec.Egress.
type EgressReopener interface {
	ReopenEgress(ctx context.Context, id string, serve func(net.Listener)) error
}

// Stats is what one sandbox holds on its host now.
type Stats struct {
	MemoryBytes     int64 // all memory charged to it, page cache and kernel memory included
	MemoryAnonBytes int64 // of which anonymous
	Pids            int64 // tasks, threads included
	CPUMicros       int64 // CPU time its processes used so far, in µs (0: not accounted)
	// DiskUsedBytes and DiskQuotaBytes are its own disk's use and size;
	// 0 when it has none of its own.
	DiskUsedBytes, DiskQuotaBytes int64
	Frozen                        bool // stopped while a disk is full
	// FrozenReason is which disk: api.FrozenHostDisk or
	// api.FrozenClonePool; a driver that leaves it empty means the host's.
	FrozenReason string
}

// StatsDriver is a Driver that can report a sandbox's usage. It is
// optional: GET /v1/sandboxes/{id}/stats answers not_supported without it.
type StatsDriver interface {
	Stats(ctx context.Context, id string) (Stats, error)
}

// MemoryKillDriver is a Driver that can tell an exec killed at its
// sandbox's memory limit from one killed otherwise (kill -9): MemoryKilled
// reports whether the kernel's OOM killer killed a process of the sandbox
// since the last call for it, or since the sandbox started for the first.
// It is asked only when a command ended with the exit code of a SIGKILL;
// the driver keeps the count it last saw. Optional: without it such an
// exec has no stop_reason.
type MemoryKillDriver interface {
	MemoryKilled(ctx context.Context, id string) (bool, error)
}

// ErrNoStats is returned by a StatsDriver that has no accounting for its
// sandboxes (the local driver without cgroups).
var ErrNoStats = errors.New("no resource accounting")

// A CapacityDriver is a Driver that accounts for the host's limits (the
// local driver). Drivers whose sandboxes live elsewhere (kube) are not.
type CapacityDriver interface {
	// AdmitCreate returns nil when the host can take n more sandboxes,
	// else a *HostLimitError.
	AdmitCreate(ctx context.Context, n int) error
	// AdmitWrite returns nil when a write may go to sandbox id ("" for
	// a new volume): the host's store is above its free-space watermark
	// (else a *HostLimitError for HostDiskResource), and the sandbox's
	// disk has not failed to store an earlier write (else an error
	// wrapping ErrInsufficientStorage).
	AdmitWrite(ctx context.Context, id string) error
	// Capacity reports the host's use of its limits and the disk use of
	// the sandboxes ids (Sandboxes is filled for those the driver has).
	Capacity(ctx context.Context, ids []string) (api.HostStatus, error)
}

// A DiskSyncer is a Driver that can flush a sandbox's writable
// filesystems to the host's storage. The server calls it after an
// operation that wrote, before acknowledging it: an error wrapping
// ErrInsufficientStorage means what was written is not stored.
type DiskSyncer interface {
	SyncDisk(ctx context.Context, id string) error
}

// A FileFlusher is a DiskSyncer whose SyncDisk flushes every filesystem a
// file write of sandbox id can reach that keeps data (its disk and its
// volumes) when FlushesFiles(id) says so: the server then has the sidecar
// write a file's data out and rename it without fsyncing
// (api.HeaderSidecarHostFlush), and flushes the disk beside the write's
// audit entry, as for an exec. Otherwise the sidecar makes the write
// durable itself.
type FileFlusher interface {
	DiskSyncer
	FlushesFiles(id string) bool
}

// ErrInsufficientStorage is wrapped by driver errors that mean the host
// could not store something: its filesystem is full (ENOSPC, EDQUOT), or
// a sandbox disk saw I/O errors because its image could not grow.
var ErrInsufficientStorage = errors.New("insufficient storage on the host")

// HostLimitError is a refusal of a CapacityDriver.
type HostLimitError struct {
	Resource string // api.HostDiskResource, api.HostThreads, …
	Used     int64
	Limit    int64  // the limit, or for the disk the watermark
	Free     int64  // disk: bytes free
	Disk     string // disk: what is short of space, "" for the host ("the clone pool")
	Hint     string // what the operator can do
}

func (e *HostLimitError) Error() string {
	if e.Resource == api.HostDiskResource {
		return fmt.Sprintf("%s has %s free, below its watermark of %s", cmp.Or(e.Disk, "the host"), formatBytes(e.Free), formatBytes(e.Limit))
	}
	return fmt.Sprintf("the host is near its %s limit: %d of %d in use", e.Resource, e.Used, e.Limit)
}

// APIError is the answer to a refused create or upload: 507
// insufficient_storage for the disk, 503 host_capacity for the rest.
func (e *HostLimitError) APIError(what string) *api.Error {
	if e.Resource == api.HostDiskResource {
		return &api.Error{
			Status: http.StatusInsufficientStorage, Code: api.CodeInsufficientStorage,
			Message: fmt.Sprintf("%s refused: %s has %s free, below its free-space watermark of %s",
				what, cmp.Or(e.Disk, "the host"), formatBytes(e.Free), formatBytes(e.Limit)),
			Hint:    cmp.Or(e.Hint, "free space on the host (remove sandboxes and volumes you no longer need), then retry"),
			Details: map[string]any{"resource": e.Resource, "free_bytes": e.Free, "watermark_bytes": e.Limit},
		}
	}
	return &api.Error{
		Status: http.StatusServiceUnavailable, Code: api.CodeHostCapacity,
		Message: fmt.Sprintf("%s refused: the host is near its %s limit (%d of %d in use); sandboxes already running keep working",
			what, e.Resource, e.Used, e.Limit),
		Hint:    cmp.Or(e.Hint, "remove sandboxes you no longer need, or raise the limit (boxkite doctor says how)"),
		Details: map[string]any{"resource": e.Resource, "used": e.Used, "limit": e.Limit},
	}
}

// formatBytes is n in the largest binary unit that keeps it at least 1.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// A LossWatcher is a Driver that notices, while the server runs, sandboxes
// that left the substrate without the server deleting them: a pod deleted
// behind its back, evicted, or failed. The server marks them lost, as
// reconcile does at start-up for those that went while it was down.
type LossWatcher interface {
	// WatchLost calls lost with the id of each sandbox that went, until
	// ctx is done or the watch breaks (an error; the server watches again).
	WatchLost(ctx context.Context, lost func(id string)) error
}

// A LossSweeper is a LossWatcher whose watch can miss a loss: a watch
// that sits on a dead connection (client-go's, 30 to 45 s before its
// health check ends it) sends nothing, and a sandbox started and gone
// within the stall is in no list the next watch starts from. Every
// LossSweepInterval the server compares its active sandboxes with Live
// and handles each one the substrate lacks as if the watch had reported
// it.
type LossSweeper interface {
	LossSweepInterval() time.Duration
	// Live returns the ids of the sandboxes that run or are starting.
	Live(ctx context.Context) (map[string]bool, error)
}

// A LossGracer is a LossWatcher that says how long its reports wait
// before a sandbox is marked lost, instead of the server's default grace: the local driver
// stops watching a sandbox before it deletes it, so its reports need none.
type LossGracer interface {
	LostGrace() time.Duration
}

// An ExpiryRecorder is a Driver that shows a sandbox's expiry on the
// substrate for its operator (the kube driver annotates the sandbox's pod
// with it), where the substrate has no timer of its own to keep in step:
// the control plane's reaper is what ends the sandbox, on every driver.
// The control plane calls RecordExpiry after each change of a running
// sandbox's expires_at (an extend, an E2B timeout, a resume), best
// effort: an error is logged, never the caller's, since the store's row
// is the truth.
type ExpiryRecorder interface {
	RecordExpiry(ctx context.Context, id string, at time.Time) error
}

// A Prober is a Driver that can tell whether a sandbox still runs. When a
// call cannot reach a sandbox's sidecar, the server asks, and marks a
// sandbox that is gone lost at once rather than answering 502.
type Prober interface {
	Probe(ctx context.Context, id string) (alive bool, err error)
}

// A StorageWatcher freezes sandboxes while the host's storage is nearly
// full and thaws them once it is not, calling changed for each change
// (pool: a freeze's cause is the local driver's clone pool, which holds the
// sandboxes' disks, rather than the host's filesystem), until ctx is done
// (nil) or the watch breaks (an error; the server watches again).
type StorageWatcher interface {
	WatchStorage(ctx context.Context, changed func(id string, frozen, pool bool)) error
}

// A PauseDriver pauses and resumes sandboxes (issue 22). Both are
// idempotent: pausing a paused sandbox in the same mode, or resuming a
// running one, does nothing.
type PauseDriver interface {
	// Pause stops sandbox id in mode (api.PauseFreeze, ...).
	Pause(ctx context.Context, id, mode string) error
	// Resume runs it again, with the same endpoint. egress is the
	// sandbox's egress server as at Create (nil: none), for a driver that
	// must start the sandbox again.
	Resume(ctx context.Context, id string, egress func(net.Listener)) error
	// PauseModes reports, for each mode, why it cannot work here ("" when
	// it can).
	PauseModes() map[string]string
}

// ErrSandboxGone is wrapped by a PauseDriver's errors when the driver holds
// nothing of the sandbox any more (its state was removed, as `boxkite down`
// removes every sandbox's): no retry can pause or resume it.
var ErrSandboxGone = errors.New("the driver holds nothing of the sandbox")

// ErrCopyElsewhere is wrapped by a driver's errors when the copy it needs
// (a paused sandbox's workspace, a snapshot's data) is not in this
// server's state directory: another server sharing the database made it
// and keeps it in its own (kube replicas without a shared state claim).
var ErrCopyElsewhere = errors.New("the copy is not in this server's state directory")

// A WarmClaimer hands out a sandbox from sandboxes it started ahead of
// need (a warm pool), when one fits spec and is ready; ok false means none
// was (nothing happened, and the caller creates the sandbox with Create).
// ok true with an error means the claim failed and left nothing behind.
//
// The control plane records a claimed sandbox in one write (its row,
// already active with the endpoint). With record not nil, the driver
// calls it at most once, on the caller's goroutine, when the sandbox's
// endpoint is settled (the driver's own state of it written) and the
// claim's request is in the sidecar's socket: either a transport of
// via's client reported it written (WithRequestWritten), so the write's
// commit overlaps the sidecar's answer, or the sidecar answered it. So a
// row record commits always names a sandbox whose sidecar will take the
// claim, even if this process dies the next instant. ClaimWarm returns
// once both are done, whatever record returned (the caller keeps
// record's error). A crash before record's commit leaves a sandbox no
// row claims, which Reconcile deletes, as it does a crash mid-Create's.
// A claim that fails after record ran answers ok false like any failed
// claim, and the caller removes what record wrote. Without record the
// caller writes after the claim.
//
// via, when not nil, is how the control plane reaches sidecars: a driver
// that talks to the claimed sandbox's sidecar to claim it does so with
// via's client for spec.ID, so the connection it opens is kept for the
// sandbox's first request (its first exec needs no dial).
type WarmClaimer interface {
	ClaimWarm(ctx context.Context, spec Spec, via SidecarClients, record func(Endpoint) error) (ep Endpoint, ok bool, err error)
}

// requestWrittenKey is the context key of WithRequestWritten.
type requestWrittenKey struct{}

// WithRequestWritten returns ctx carrying written, which a transport of
// the control plane's sidecar clients calls, at most once, when a request
// made with the returned context has been written whole to its
// connection: the last write to the socket returned, so the sidecar reads
// the request even if this process dies next (on a unix socket the bytes
// are in the sidecar's receive queue). A transport that cannot tell (one
// that buffers the request on another goroutine, net/http's Transport)
// never calls it. httptrace's WroteRequest is not this: it fires with the
// request still in the writer's buffer.
func WithRequestWritten(ctx context.Context, written func()) context.Context {
	return context.WithValue(ctx, requestWrittenKey{}, written)
}

// RequestWritten is the function WithRequestWritten put in ctx, or nil.
func RequestWritten(ctx context.Context) func() {
	f, _ := ctx.Value(requestWrittenKey{}).(func())
	return f
}

// SidecarClients gives the HTTP client the control plane reaches a
// sandbox's sidecar with (the server's sidecar.Clients): one per sandbox,
// keeping its connections alive between requests.
type SidecarClients interface {
	Client(id string, ep Endpoint) (*http.Client, error)
}

// A CallWatcher is a Driver whose background work (the local driver's
// warm pool refills) waits for the sandboxes' calls to pause: the control
// plane gives it, once, a function reporting how long no call to a
// sidecar has been in flight (0 while one is).
type CallWatcher interface {
	WatchCalls(idle func() time.Duration)
}

// An EndpointDriver reports how a sandbox's sidecar is reached now. The
// control plane asks after a resume, which may have moved it (the kube
// driver starts a filesystem-paused sandbox's pod again, at a new address).
type EndpointDriver interface {
	Endpoint(ctx context.Context, id string) (Endpoint, error)
}

// A SnapshotDriver copies a sandbox's filesystem state into a store of
// its own and starts new sandboxes from it (Spec.FromSnapshot): snapshots,
// restores and forks (issue 22).
type SnapshotDriver interface {
	// Snapshot copies sandbox id's filesystem (its workspace and outputs),
	// crash-consistent: the sandbox's processes are stopped for the
	// instant of the copy. A transient snapshot is for a fork, deleted
	// once the children started; it is not content-addressed.
	//
	// claim, unless nil, is called with the key once it is known, before
	// the driver keeps data stored under it already (the same state) or
	// puts its own there: the control plane records the key as the
	// pending snapshot's (SnapshotStore.ClaimSnapshotKey), so that the
	// delete of the last other snapshot holding it, on any server
	// sharing the store, keeps the data. Its error fails the snapshot,
	// which then puts no data of its own under the key. Not called for a
	// transient snapshot.
	Snapshot(ctx context.Context, id string, transient bool, claim func(key string) error) (SnapshotRef, error)
	// DeleteSnapshot removes the data under key. The caller makes sure no
	// other snapshot still refers to the key (keys are content addresses,
	// so identical snapshots share one): SnapshotStore.BeginSnapshotDrop.
	DeleteSnapshot(ctx context.Context, key string) error
}

// A SnapshotPorter is a SnapshotDriver whose snapshots' data can be copied
// out of its store and back: the control plane keeps snapshots in the
// operator's object storage when one is configured (docs/storage.md), so
// that a snapshot outlives the host and restores on another.
type SnapshotPorter interface {
	// ExportSnapshot opens key's data in the driver's portable form
	// (holes left out) and returns its length.
	ExportSnapshot(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// ImportSnapshot stores under key the data read from r, as
	// ExportSnapshot gave it; data already under key is kept.
	ImportSnapshot(ctx context.Context, key string, r io.Reader) error
	// HasSnapshot reports whether key's data is in the driver's store.
	HasSnapshot(ctx context.Context, key string) (bool, error)
}

// A SnapshotLister is a SnapshotDriver that can list its store: the
// control plane deletes the data no snapshot holds any more, which a take
// whose snapshot was deleted while it copied, and whose server then died,
// leaves behind (server/snapshot, leftovers.go).
type SnapshotLister interface {
	// SnapshotKeys returns the keys of the snapshots in the driver's
	// store: the content-addressed ones a snapshot claims, not the
	// transient copies of forks (or a paused sandbox's), and not copies
	// still under way.
	SnapshotKeys(ctx context.Context) ([]string, error)
}

// A PartialSnapshotLister is a SnapshotLister whose store servers share
// (the kube driver's snapshot directory, on a volume every replica
// mounts): a copy under way is a file of its own there, which the copy's
// server removes if the copy fails, but which a server that dies mid-copy
// leaves. No server's start may remove them all, as the local driver's
// does its own: another's copy may be under way. So a copy holds a lock
// on its file until it is renamed or removed, which the kernel (or the
// file server) lets go when its process dies, and the control plane's
// sweep deletes what no copy holds once it has found it so for a take's
// longest run (server/snapshot, leftovers.go).
type PartialSnapshotLister interface {
	// UnheldPartialSnapshots returns the names of the copies in the
	// store that no copy under way holds: those of copies cut short.
	UnheldPartialSnapshots(ctx context.Context) ([]string, error)
	// DeletePartialSnapshot removes the copy name if no copy holds it;
	// a gone or held one is not an error.
	DeletePartialSnapshot(ctx context.Context, name string) error
}

// SnapshotRef names a snapshot's data in a SnapshotDriver's store.
type SnapshotRef struct {
	Key       string // what Spec.FromSnapshot and DeleteSnapshot take
	SizeBytes int64  // bytes of data it holds
	// Method is how it was copied: "reflink" (copy-on-write clone),
	// "copy", "volume-snapshot" or "sidecar-copy".
	Method string
	// MountPoints are the sandbox paths where volumes were mounted: the
	// copy holds their mount points, not their data (Spec.MountPoints).
	MountPoints []string
}
