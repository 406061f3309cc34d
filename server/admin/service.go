package admin

import (
	"errors"
	"log/slog"
	"time"
)

// Deps is what the operator's routes need of the control plane.
type Deps struct {
	Store Store
	Log   *slog.Logger
	Now   func() time.Time
	// IsOperator reports whether an account holds the operator role
	// (the server's configuration).
	IsOperator func(accountID string) bool
	// GlobalLimit is the server's bound on concurrent sandboxes (0: none).
	GlobalLimit int
}

// Service serves /v1/admin/*.
type Service struct {
	d       Deps
	refusal refusalWindow
}

// New returns the service; every field of d but GlobalLimit is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Log == nil || d.Now == nil || d.IsOperator == nil {
		return nil, errors.New("admin: a dependency is missing")
	}
	d.Store = authorized{inner: d.Store, isOperator: d.IsOperator}
	return &Service{d: d}, nil
}
