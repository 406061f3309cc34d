package local

import (
	"context"
	"errors"
	"log/slog"

	"github.com/boxkite/boxkite/server"
)

// Config configures the local driver.
type Config struct {
	StateDir    string       // each sandbox lives in StateDir/sandboxes/<id>
	SidecarPath string       // the boxkite-sidecar binary to jail
	Log         *slog.Logger // nil means slog.Default()
}

// Driver runs each sandbox as a jailed boxkite-sidecar process.
type Driver struct {
	cfg Config
}

var _ server.Driver = (*Driver)(nil)

// New returns a Driver for cfg.
func New(cfg Config) (*Driver, error) { return &Driver{cfg: cfg}, nil }

// Create starts a jailed sidecar and returns once it answers /health.
func (d *Driver) Create(ctx context.Context, spec server.Spec) (server.Endpoint, error) {
	return server.Endpoint{}, errors.New("local driver: not implemented yet")
}

// Delete kills the sandbox's processes and removes its state. A gone sandbox is not an error.
func (d *Driver) Delete(ctx context.Context, id string) error { return nil }

// List reports the sandboxes found in the state directory.
func (d *Driver) List(ctx context.Context) ([]server.Observed, error) { return nil, nil }

// Shutdown stops every sandbox of this driver (used by `boxkite down`).
func (d *Driver) Shutdown(ctx context.Context) error { return nil }
