package e2bport

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/internal/allowlist"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sandbox"
)

// Store is what the port reads: keys and accounts (Auth), sandboxes and
// snapshots (Lifecycle), allowlists (Sessions). The server hands it the
// store behind the authorization layer.
type Store interface {
	APIKeyByHash(ctx context.Context, hash string) (*model.APIKey, *model.Account, error)
	ListAPIKeys(ctx context.Context, accountID string) ([]*model.APIKey, error)
	AccountByID(ctx context.Context, id string) (*model.Account, error)
	Sandbox(ctx context.Context, accountID, id string) (*model.Sandbox, error)
	SandboxByID(ctx context.Context, id string) (*model.Sandbox, error)
	ListSandboxes(ctx context.Context, accountID string, activeOnly bool) ([]*model.Sandbox, error)
	SandboxesWithStatus(ctx context.Context, status string) ([]*model.Sandbox, error)
	UpdateSandbox(ctx context.Context, id string, fn func(*model.Sandbox) error) (*model.Sandbox, error)
	Snapshot(ctx context.Context, accountID, id string) (*model.Snapshot, error)
	ListSnapshots(ctx context.Context, accountID, sandboxID string) ([]*model.Snapshot, error)
	AllowedCommands(ctx context.Context, accountID string) ([]api.CommandRule, error)
}

// Sandboxes is the lifecycle hub (*sandbox.Service).
type Sandboxes interface {
	Start(ctx context.Context, acct *model.Account, spec sandbox.StartSpec) ([]*model.Sandbox, error)
	Destroy(ctx context.Context, id, status, reason string) error
	Pause(ctx context.Context, sb *model.Sandbox, mode string) (*model.Sandbox, error)
	Resume(ctx context.Context, acct *model.Account, sb *model.Sandbox) (*model.Sandbox, []api.ResumedProcess, error)
	Unreachable(ctx context.Context, sb *model.Sandbox) *api.Error
	RecordExpiry(ctx context.Context, sb *model.Sandbox)
}

// Snapshots is the snapshot service (*snapshot.Service).
type Snapshots interface {
	Take(ctx context.Context, acct *model.Account, sb *model.Sandbox, label string) (*model.Snapshot, error)
	Delete(ctx context.Context, sn *model.Snapshot) error
	Restore(ctx context.Context, acct *model.Account, sn *model.Snapshot, label string) (*model.Sandbox, error)
	Fork(ctx context.Context, acct *model.Account, sb *model.Sandbox, count int) ([]*model.Sandbox, error)
}

// Deps is what the port needs of the rest of the control plane.
type Deps struct {
	Store Store
	Log   *slog.Logger
	Now   func() time.Time

	// Auth: the root's credential plumbing.
	Touch           func(k *model.APIKey)                                 // queues the key's last_used_at
	TokenSecret     func(ctx context.Context) ([]byte, error)             // the access tokens' signing key
	CredentialValid func(ctx context.Context, keyID string) (bool, error) // not revoked, here or elsewhere

	// Lifecycle.
	Sandboxes   Sandboxes
	Snapshots   Snapshots
	Driver      model.Driver  // the base driver, asked for model.StatsDriver
	MaxLifetime time.Duration // ceiling of a sandbox's timeout
	KeepsImages bool          // the server builds and imports boxkite images (not the kube driver's)

	// Sessions.
	Allowlists *allowlist.Cache
	Sidecars   *sidecar.Clients
	Audit      *audit.Log
	// DialSidecarWS opens a WebSocket route of a sandbox's sidecar.
	DialSidecarWS func(r *http.Request, sb *model.Sandbox, path string, q url.Values, failMsg string) (*websocket.Conn, error)
	// WatchRevocation calls cancel when the key is revoked, demoted past
	// demotions (its count when the session was resolved), or when it
	// expires at expires (nil: never); stop ends it.
	WatchRevocation func(keyID string, expires *time.Time, demotions int64, cancel context.CancelCauseFunc) (stop func())
	// ReserveInterpreter reserves a code cell's held outcome for account
	// of the server's held-output budget (exec.HeldBudget).
	ReserveInterpreter func(account string) (release func(), err error)
	// ReserveFileOp reserves a file operation's held answer, heldOutput
	// bytes of output (an exec result and what is parsed from it), for
	// account.
	ReserveFileOp func(account, op string, heldOutput int64) (release func(), err error)
}

// Port is e2b.ControlPlane, its three parts side by side.
type Port struct {
	*Auth
	*Lifecycle
	*Sessions
}

var _ e2b.ControlPlane = Port{}

// New returns the port; every field of d is required.
func New(d Deps) (Port, error) {
	if d.Store == nil || d.Log == nil || d.Now == nil || d.Touch == nil || d.TokenSecret == nil || d.CredentialValid == nil ||
		d.Sandboxes == nil || d.Snapshots == nil || d.Driver == nil || d.Allowlists == nil || d.Sidecars == nil ||
		d.Audit == nil || d.DialSidecarWS == nil || d.WatchRevocation == nil || d.ReserveInterpreter == nil || d.ReserveFileOp == nil {
		return Port{}, errors.New("e2bport: a dependency is missing")
	}
	a := &Auth{d: d}
	l := &Lifecycle{d: d}
	return Port{Auth: a, Lifecycle: l, Sessions: &Sessions{d: d, auth: a, life: l}}, nil
}

// caller is e2b.Caller: the account and key Auth resolved.
type caller struct {
	acct *model.Account
	key  *model.APIKey
}

func (c caller) AccountID() string { return c.acct.ID }
func (c caller) KeyID() string     { return c.key.ID }

func account(c e2b.Caller) *model.Account { return c.(caller).acct }
