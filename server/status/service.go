package status

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Store is what status reads of the store.
type Store interface {
	Ping(ctx context.Context) error
	Usage(ctx context.Context, accountID string, since, now time.Time) (model.Usage, error)
	ListSandboxes(ctx context.Context, accountID string, activeOnly bool) ([]*model.Sandbox, error)
}

// Deps is what the status service needs of the control plane.
type Deps struct {
	Store Store
	Log   *slog.Logger
	Now   func() time.Time
	// Version and DriverName are reported as they are.
	Version, DriverName string
	// MonthlySandboxHours and AccountConcurrent are the account's
	// fair-use limits; 0 means none.
	MonthlySandboxHours float64
	AccountConcurrent   int
	// AuditOpen refuses audited work while the audit log takes no entries.
	AuditOpen func() error
	// AuditState reports since when and why the audit log takes no
	// entries (a nil cause while it does).
	AuditState func() (since time.Time, cause error)
	// Capacity returns the driver's host accounting, if it has one.
	Capacity func() (model.CapacityDriver, bool)
	// Metrics serves GET /metrics.
	Metrics http.HandlerFunc
	// SidecarProtocol is the protocol version sandbox id's sidecar last
	// stated to this server, and whether one did yet.
	SidecarProtocol func(id string) (int, bool)
}

// Service serves the status routes.
type Service struct{ d Deps }

// New returns the service; every field of d but the limits and the
// strings is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Log == nil || d.Now == nil || d.AuditOpen == nil || d.AuditState == nil ||
		d.Capacity == nil || d.Metrics == nil || d.SidecarProtocol == nil {
		return nil, errors.New("status: a dependency is missing")
	}
	return &Service{d: d}, nil
}
