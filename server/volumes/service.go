package volumes

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
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
	// Limit is how many volumes an account may keep: 0 for
	// api.DefaultVolumeLimit, negative for no limit.
	Limit int
}

// Service serves volumes.
type Service struct {
	d Deps
	// creating serializes this server's volume creates, so two at once
	// cannot both pass the account's limit (servers sharing Postgres can
	// still overshoot it by one each).
	creating sync.Mutex
}

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Driver == nil || d.Log == nil || d.Now == nil || d.MaxGB <= 0 ||
		d.AdmitWrite == nil || d.Discard == nil || d.CleanupTimeout <= 0 {
		return nil, errors.New("volumes: a dependency is missing")
	}
	if d.Limit == 0 {
		d.Limit = api.DefaultVolumeLimit
	}
	return &Service{d: d}, nil
}
