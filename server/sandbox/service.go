package sandbox

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/keylock"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// Config is the lifecycle's share of the server's configuration, its
// defaults already applied (server.Config.WithDefaults).
type Config struct {
	DriverName      string        // recorded on each sandbox
	DefaultLifetime time.Duration // lifetime when a create asks for none
	MaxLifetime     time.Duration // ceiling for create and extend
	MaxStorageGB    float64       // ceiling for storage_gb
	MaxCount        int           // ceiling for count in one create
	// MaxPausedAge is how long a sandbox may stay paused before the
	// reaper destroys it; negative means forever.
	MaxPausedAge time.Duration
	// PausedLimit is how many paused sandboxes an account may keep;
	// negative means no limit.
	PausedLimit int
	Limits      Limits // fair use of sandbox creation; zero fields mean none
	// EgressResolver resolves names for the egress proxy (nil: the
	// system's); EgressPermitForTests exempts addresses from its
	// forbidden ranges (tests only).
	EgressResolver       egress.Resolver
	EgressPermitForTests func(netip.Addr) bool
	// AfterTeardownForTests, when set, runs after the driver tore a
	// sandbox down and before its removal is recorded (tests only: the
	// fault suite breaks the database there).
	AfterTeardownForTests func(id string)
	// LockWaitForTests, when set, runs when a lifecycle change of sandbox
	// id is about to wait for another's (sandboxlock.go): tests only.
	LockWaitForTests func(id string)
	// SoleServer is set when no other server shares the store (SQLite,
	// which one server holds alone): lifecycle changes then skip the
	// lease that orders them between servers (lease.go).
	SoleServer bool
	// Instance is this server's id, the owner of the lifecycle leases it
	// takes; "" makes one.
	Instance string
	// PublicURL is the server's public base URL ("" when unset): the
	// list's Link rel="next" target starts with it, so a client behind a
	// proxy that adds a path prefix follows the link to the right place.
	PublicURL string
}

// Store is what the lifecycle reads and writes: sandbox rows, the
// fair-use reservation and usage, and sandboxes' egress grants.
type Store interface {
	model.SandboxStore
	ReserveSandboxes(ctx context.Context, accountID string, since, now time.Time, check func(model.Usage) error, sbs []*model.Sandbox) error
	Usage(ctx context.Context, accountID string, since, now time.Time) (model.Usage, error)
	SetSandboxEgress(ctx context.Context, sandboxID string, grants []string) error
	SandboxEgress(ctx context.Context, sandboxID string) ([]string, error)
}

// Volumes checks a create's volume mounts and records them (server/volumes).
type Volumes interface {
	ValidateMounts(ctx context.Context, acct *model.Account, mounts map[string]string) ([]model.VolumeMount, error)
	Attach(ctx context.Context, recs []*model.Sandbox, mounts []model.VolumeMount) error
}

// Secrets checks a create's secret names and grants them to the new
// sandbox (server/secrets; a nil *secrets.Service refuses any).
type Secrets interface {
	CheckNames(ctx context.Context, accountID string, names []string) error
	Grant(ctx context.Context, sandboxID string, names []string) error
	// Granted and Inherit carry a sandbox's grants (by secret id) to its
	// forks and restores.
	Granted(ctx context.Context, sandboxID string) ([]model.SecretGrant, error)
	Inherit(ctx context.Context, sandboxID string, grants []model.SecretGrant) error
}

// Deps is what the lifecycle needs of the rest of the control plane.
type Deps struct {
	Config Config
	Store  Store
	// Driver creates, lists and deletes sandboxes (the server's, which
	// counts them); Base is the driver behind it, asked for its optional
	// capabilities (model.PauseDriver, model.CapacityDriver, …).
	Driver, Base model.Driver
	Log          *slog.Logger
	Now          func() time.Time
	Sidecars     *sidecar.Clients
	Calls        *sidecar.Calls // calls in flight, ended when a sandbox freezes, pauses or goes
	Audit        *audit.Log
	// Emit queues a webhook event (server/webhooks); a failure is the
	// emitter's to log.
	Emit func(ctx context.Context, accountID, event string, data any)
	// HealthTimeout bounds the start-up sweep of sidecar health checks.
	HealthTimeout func() time.Duration
	// ImageRoot resolves a create's image_id to a root filesystem
	// (server/imagesapi); UseImage records a sandbox's use of it.
	ImageRoot func(ctx context.Context, accountID, imageID string) (string, error)
	UseImage  func(ctx context.Context, imageID, sandboxID string) error
	Volumes   Volumes
	// Grants resolves a create's MCP connection names to egress grants
	// (server/mcpconns).
	Grants  func(ctx context.Context, acct *model.Account, names []string) (egress.Allowlist, error)
	Secrets Secrets
	// Hooks, when set, is told of each sandbox created and each about to
	// be destroyed (the storage sync, server/storagesync).
	Hooks Hooks
}

// Hooks follow sandboxes' lives: Created once a sandbox is active,
// Destroying before the driver deletes it (readable: its sidecar can
// still serve its files). Each may take time (the storage sync's bounded
// final flush); errors are the hook's to log.
type Hooks interface {
	Created(ctx context.Context, sb *model.Sandbox)
	Destroying(ctx context.Context, sb *model.Sandbox, readable bool)
}

// destroying tells the hooks that sandbox id is about to be destroyed.
func (s *Service) destroying(ctx context.Context, id, status string) {
	if s.d.Hooks == nil {
		return
	}
	sb, err := s.store.SandboxByID(context.WithoutCancel(ctx), id)
	if err != nil || !sb.Live() {
		return
	}
	_, frozen := s.frozen.get(id)
	// A removal begun before (a retry, or one a start finishes) may have
	// torn the sandbox down already.
	begun := s.removing(sb) != ""
	s.d.Hooks.Destroying(ctx, sb, sb.Active() && status != api.StatusLost && !frozen && !begun)
}

// Service is the sandbox lifecycle.
type Service struct {
	d        Deps
	cfg      Config
	store    Store
	driver   model.Driver
	log      *slog.Logger
	sidecars *sidecar.Clients
	calls    *sidecar.Calls
	frozen   frozenSandboxes
	removals removals // torn down, not recorded (removals.go)
	// lifecycleLocks serialise the lifecycle changes of one sandbox —
	// pause, resume, destroy, the copy of a snapshot or a fork — in this
	// process, so a resume racing another resume or a delete acts on the
	// state the other left: one driver resume, never a resume of a sandbox
	// whose teardown began, and a delete waits for a snapshot's copy under
	// way. Each holder reloads the row after it got the lock. Waiting is
	// Config.LockWaitForTests.
	lifecycleLocks keylock.Locks[string]
	// instance is this server's id, the owner of the lifecycle leases it
	// takes (lease.go).
	instance        string
	lastPausedSweep time.Time // of paused sandboxes past MaxPausedAge; only Tick touches it
}

// New returns the service; every field of d is required but
// Config.EgressResolver and Config.EgressPermitForTests.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Driver == nil || d.Base == nil || d.Log == nil || d.Now == nil || d.Sidecars == nil ||
		d.Calls == nil || d.Audit == nil || d.Emit == nil || d.HealthTimeout == nil || d.ImageRoot == nil ||
		d.UseImage == nil || d.Volumes == nil || d.Grants == nil || d.Secrets == nil {
		return nil, errors.New("sandbox: a dependency is missing")
	}
	return &Service{
		d: d, cfg: d.Config, store: d.Store, driver: d.Driver, log: d.Log, sidecars: d.Sidecars, calls: d.Calls,
		lifecycleLocks: keylock.Locks[string]{Waiting: d.Config.LockWaitForTests}, instance: cmp.Or(d.Config.Instance, model.NewID()),
	}, nil
}

func (s *Service) now() time.Time { return s.d.Now() }

// baseDriver is the driver behind the counting one, for its optional
// capabilities.
func (s *Service) baseDriver() model.Driver { return s.d.Base }

// driverAs is the driver as T, one of its optional capabilities
// (model.PauseDriver, model.StatsDriver, …), if it has it.
func driverAs[T any](s *Service) (T, bool) {
	d, ok := s.baseDriver().(T)
	return d, ok
}

// audit appends an entry for rec (audit.Log.Append).
func (s *Service) audit(ctx context.Context, rec audit.Record) error {
	return s.d.Audit.Append(ctx, rec)
}

// auditOpen is the refusal of audited work while the audit log takes no
// entries, else nil.
func (s *Service) auditOpen() error { return s.d.Audit.Open() }

func (s *Service) emit(ctx context.Context, accountID, event string, data any) {
	s.d.Emit(ctx, accountID, event, data)
}

// Tick is one pass of the reaper: expired sandboxes are destroyed (or
// auto-paused), and, at most once a pausedSweepInterval, sandboxes paused
// longer than MaxPausedAge.
func (s *Service) Tick(ctx context.Context) {
	s.FinishRemovals(ctx)
	s.Reap(ctx)
	now := s.now()
	if now.Sub(s.lastPausedSweep) >= pausedSweepInterval {
		s.lastPausedSweep = now
		s.ReapPaused(ctx)
	}
}
