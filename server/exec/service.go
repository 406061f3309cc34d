package exec

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// Deps is what exec needs of the control plane: the sandbox it runs in
// and the way to its sidecar come from the sandbox lifecycle.
type Deps struct {
	Audit *audit.Log
	Log   *slog.Logger
	Now   func() time.Time
	// LoadActive loads the request's {id} sandbox for its caller and
	// refuses one that is not active.
	LoadActive func(r *http.Request) (*model.Sandbox, error)
	// Forward sends a call to the sandbox's sidecar and the answer to w.
	Forward func(w http.ResponseWriter, r *http.Request, sb *model.Sandbox, c *sidecar.Call) error
	// DialSidecarWS opens a WebSocket route of the sandbox's sidecar.
	DialSidecarWS func(r *http.Request, sb *model.Sandbox, path string, q url.Values, failMsg string) (*websocket.Conn, error)
	// AbortResponse breaks the connection of an answer that cannot end well.
	AbortResponse func(r *http.Request, err error)
	// SyncDisk flushes what the command wrote to the host's storage; the
	// error is the answer to give instead of the result.
	SyncDisk func(ctx context.Context, sb *model.Sandbox, op string) error
	// Healthy tells whether the sandbox's sidecar answers.
	Healthy func(ctx context.Context, sb *model.Sandbox) bool
	// FrozenAnswer is the answer while the sandbox is frozen, else nil.
	FrozenAnswer func(id string) error
	// EndedAnswer is why a command that ended without an exit status did,
	// when its sandbox went with it (destroyed, expired, lost; worded the
	// same while the destroy runs and after), or nil.
	EndedAnswer func(ctx context.Context, sb *model.Sandbox) *api.Error
	// Calls are the calls in flight per sandbox.
	Calls *sidecar.Calls
	// CheckCommand enforces the caller's command allowlist.
	CheckCommand func(r *http.Request, command string) error
	// NewScrub returns the caller's output scrubber, nil when its account
	// keeps secrets in its output.
	NewScrub func(r *http.Request) *scrub.Exec
	// ObserveExec records an exec's duration in the metrics.
	ObserveExec func(d time.Duration)
	// SecretEnv resolves an exec's secret_env into req.Env (the server's
	// opt-in weaker mode, docs/secrets.md) and returns what wraps the JSON
	// result so echoes of the values are redacted (finish writes it on);
	// nil when the exec names no secrets.
	SecretEnv func(r *http.Request, sb *model.Sandbox, req *api.ExecRequest) (wrap func(http.ResponseWriter) (w http.ResponseWriter, finish func()), err error)
	// MaxOutputBytes is the largest max_output_bytes an exec may ask for.
	MaxOutputBytes int64
	// HeldOutput bounds the memory JSON exec answers hold until audited.
	HeldOutput *HeldBudget
	// MemoryKilled reports whether the sandbox's memory limit killed one
	// of its processes since it was last asked (model.MemoryKillDriver;
	// false for a driver that cannot tell): asked only when a command
	// ended with the exit code of a SIGKILL.
	MemoryKilled func(ctx context.Context, sb *model.Sandbox) bool
}

// Service runs commands in sandboxes.
type Service struct{ d Deps }

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Audit == nil || d.Log == nil || d.Now == nil || d.LoadActive == nil ||
		d.Forward == nil || d.DialSidecarWS == nil || d.AbortResponse == nil || d.SyncDisk == nil ||
		d.Healthy == nil || d.FrozenAnswer == nil || d.EndedAnswer == nil || d.Calls == nil || d.CheckCommand == nil ||
		d.NewScrub == nil || d.ObserveExec == nil || d.SecretEnv == nil || d.MaxOutputBytes <= 0 || d.HeldOutput == nil || d.MemoryKilled == nil {
		return nil, errors.New("exec: a dependency is missing")
	}
	return &Service{d: d}, nil
}
