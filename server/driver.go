package server

import (
	"context"
	"net"
	"time"
)

// A Driver runs sandboxes on some substrate. server/local (Linux namespaces)
// and server/kube (pods) implement it; the server chooses one in main.
type Driver interface {
	// Create provisions the sandbox and returns once its sidecar answers /health.
	Create(ctx context.Context, spec Spec) (Endpoint, error)
	// Delete tears it down. Deleting a sandbox that is already gone is not an error.
	Delete(ctx context.Context, id string) error
	// List reports what the substrate has, for reconciliation after a restart.
	List(ctx context.Context) ([]Observed, error)
}

// Spec is what a driver needs to create one sandbox.
type Spec struct {
	ID        string        // server-generated, unique; safe as a file or DNS name
	Size      string        // api.SizeSmall, api.SizeMedium, api.SizeLarge
	StorageGB float64       // 0 means the driver default
	Lifetime  time.Duration // the driver may enforce it as a backstop to the reaper
	// Volumes are mounted read-write at their paths; only a driver that
	// implements VolumeDriver is given any.
	Volumes []VolumeMount
	// Egress, when set, asks the driver for an egress socket in the
	// sandbox (jail.EgressSocketName in its run dir); the driver hands its
	// listener to Egress, which serves it until the driver closes it at
	// Delete. Nil means no network at all.
	Egress func(net.Listener)
	// ImageRoot is the host path of the image's read-only root filesystem
	// (server/images); "" means the host's system dirs.
	ImageRoot string
}

// Endpoint is how the control plane reaches a sandbox's sidecar.
type Endpoint struct {
	Network string // "unix" or "tcp"
	Address string // socket path or host:port
	Token   string // presented as X-Sidecar-Auth-Token on every request
	CertPEM []byte // for tcp: the sidecar's self-signed certificate, pinned
}

// Observed is one sandbox as the substrate reports it.
type Observed struct {
	ID       string
	Endpoint Endpoint
	Alive    bool // the substrate believes the sidecar is running
}
