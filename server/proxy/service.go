package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// Deps is what the proxy needs of the control plane: the sandbox and its
// state come from the sandbox lifecycle, the disk checks from the host's
// capacity, the allowlist and scrubbing from the caller's account.
type Deps struct {
	Audit *audit.Log
	Log   *slog.Logger
	Now   func() time.Time
	// Sidecars are the sandboxes' sidecar clients; Calls the calls in
	// flight per sandbox, which a freeze, pause or destroy ends.
	Sidecars *sidecar.Clients
	Calls    *sidecar.Calls
	// LoadActive loads the request's {id} sandbox for its caller and
	// refuses one that is not active.
	LoadActive func(r *http.Request) (*model.Sandbox, error)
	// FrozenAnswer is the answer while the sandbox is frozen, else nil.
	FrozenAnswer func(id string) error
	// Unreachable is the answer when the sandbox's sidecar cannot be
	// reached (the sandbox may be lost).
	Unreachable func(ctx context.Context, sb *model.Sandbox) *api.Error
	// CheckBodyCommand enforces the caller's allowlist on a JSON body's
	// "command", or its "code" as program -e/-c (python3, node) when code
	// is set.
	CheckBodyCommand func(r *http.Request, body []byte, code bool, program string) error
	// AdmitWrite refuses an upload while the host is short of disk, or
	// one of size bytes (-1: unknown) that would take it there.
	AdmitWrite func(ctx context.Context, id string, size int64) error
	// BrokenDisk is the answer when a write the sidecar failed could not
	// be stored by the host, else nil.
	BrokenDisk func(ctx context.Context, sb *model.Sandbox, op string) error
	// SyncDisk flushes what an operation wrote to the host's storage; the
	// error is the answer to give instead of the result.
	SyncDisk func(ctx context.Context, sb *model.Sandbox, op string) error
	// FlushesFiles reports whether SyncDisk makes sb's file writes
	// durable, so that its sidecar need not fsync them
	// (model.FileFlusher).
	FlushesFiles func(sb *model.Sandbox) bool
	// ScrubsOutput reports whether command output returned to the caller
	// is scrubbed of secrets; ScrubIdle is how long a scrubbed stream
	// holds back its end.
	ScrubsOutput func(r *http.Request) bool
	ScrubIdle    func() time.Duration
	// ReserveHeld reserves n bytes of the held-output budget for account
	// before what asks the sidecar for an answer the control plane holds
	// whole (exec.HeldBudget.Reserve); release gives them back.
	ReserveHeld func(account string, n int64, what, hint string) (release func(), err error)
}

// Service proxies calls to sandboxes' sidecars.
type Service struct {
	d Deps
	// copyBufs recycles the copy buffers (forward.go).
	copyBufs sync.Pool
	// aheadBufs recycles the read-ahead buffers of small uploads
	// (readSmallUpload).
	aheadBufs sync.Pool
}

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Audit == nil || d.Log == nil || d.Now == nil || d.Sidecars == nil || d.Calls == nil ||
		d.LoadActive == nil || d.FrozenAnswer == nil || d.Unreachable == nil ||
		d.CheckBodyCommand == nil || d.AdmitWrite == nil || d.BrokenDisk == nil || d.SyncDisk == nil ||
		d.FlushesFiles == nil || d.ScrubsOutput == nil || d.ScrubIdle == nil || d.ReserveHeld == nil {
		return nil, errors.New("proxy: a dependency is missing")
	}
	return &Service{d: d}, nil
}
