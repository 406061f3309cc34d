package auditlog

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// DefaultKeepAlive is how often an idle watch stream gets a comment line,
// so proxies and clients do not time it out.
const DefaultKeepAlive = 15 * time.Second

// Deps is what the audit log's routes need of the control plane.
type Deps struct {
	Store model.AuditStore
	// Audit is the log entries are appended to; its broker wakes watchers.
	Audit *audit.Log
	Log   *slog.Logger
	// LoadSandbox loads the request's {id} sandbox for its caller,
	// destroyed ones included.
	LoadSandbox func(r *http.Request) (*model.Sandbox, error)
	// Watching counts open watch streams (+1 when one opens, -1 when it
	// ends), for the metrics.
	Watching func(delta float64)
	// KeepAlive is how often an idle watch stream gets a comment.
	KeepAlive func() time.Duration
}

// Service serves the audit logs.
type Service struct{ d Deps }

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Audit == nil || d.Log == nil || d.LoadSandbox == nil || d.Watching == nil || d.KeepAlive == nil {
		return nil, errors.New("auditlog: a dependency is missing")
	}
	return &Service{d: d}, nil
}
