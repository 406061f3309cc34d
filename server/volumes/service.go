package volumes

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Deps is what the volumes service needs of the control plane.
type Deps struct {
	Store model.VolumeStore
	// Driver is the sandbox driver; volumes need it to be a
	// model.VolumeDriver, else creating one answers not_supported.
	Driver model.Driver
	Log    *slog.Logger
	Now    func() time.Time
	// MaxGB is the largest size_gb a volume may ask for.
	MaxGB float64
	// AdmitWrite asks the host whether a write may go to sandbox id (""
	// for a new volume); a refusal is a *model.HostLimitError.
	AdmitWrite func(ctx context.Context, id string) error
	// Discard tears down a sandbox reserved for a create that failed.
	Discard func(ctx context.Context, id string)
	// CleanupTimeout bounds compensating work that outlives a request.
	CleanupTimeout time.Duration
}

// Service serves volumes.
type Service struct{ d Deps }

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Driver == nil || d.Log == nil || d.Now == nil || d.MaxGB <= 0 ||
		d.AdmitWrite == nil || d.Discard == nil || d.CleanupTimeout <= 0 {
		return nil, errors.New("volumes: a dependency is missing")
	}
	return &Service{d: d}, nil
}
