package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// usageProtocol is the sidecar protocol version from which the sidecar
// serves GET /usage (server/internal/sidecar's ProtoUsage;
// docs/architecture.md, "Sidecar protocol versions").
const usageProtocol = 2

var _ model.StatsDriver = (*Driver)(nil)

// Stats implements model.StatsDriver: the sandbox's pod's sidecar reads
// the cgroup of its container (GET /usage), where the sidecar and every
// command of the sandbox run: memory held (page cache included), tasks
// and CPU time. No disk: the workspace is an emptyDir of the node's. A
// pod whose container has no cgroup to read is model.ErrNoStats; one
// whose sidecar predates /usage is a 501 not_supported that says so.
// It reported nothing before (GET /v1/sandboxes/{id}/stats answered
// not_supported, E2B's getMetrics 0).
func (d *Driver) Stats(ctx context.Context, id string) (model.Stats, error) {
	ep, err := d.sandboxEndpoint(ctx, id)
	if err != nil {
		return model.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, err)
	}
	return sidecarUsage(ctx, ep, id)
}

// sidecarUsage asks the sidecar at ep of sandbox id for GET /usage.
func sidecarUsage(ctx context.Context, ep model.Endpoint, id string) (model.Stats, error) {
	hc, err := pinnedClient(ep.CertPEM)
	if err != nil {
		return model.Stats{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ep.Address+"/usage", nil)
	if err != nil {
		return model.Stats{}, fmt.Errorf("sidecar /usage: %w", err)
	}
	req.Header.Set(api.HeaderSidecarToken, ep.Token)
	resp, err := hc.Do(req)
	if err != nil {
		return model.Stats{}, fmt.Errorf("sidecar /usage: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return model.Stats{}, fmt.Errorf("sidecar /usage: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		var u api.SidecarUsage
		if err := json.Unmarshal(body, &u); err != nil {
			return model.Stats{}, fmt.Errorf("sidecar /usage: decode: %w", err)
		}
		return model.Stats{MemoryBytes: u.MemoryBytes, MemoryAnonBytes: u.MemoryAnonBytes, Pids: u.Pids, CPUMicros: u.CPUMicros}, nil
	case resp.StatusCode == http.StatusNotFound && api.SidecarProtocolOf(resp.Header) < usageProtocol:
		return model.Stats{}, olderSidecarUsage(id)
	case resp.StatusCode == http.StatusNotImplemented:
		return model.Stats{}, fmt.Errorf("sidecar /usage: %s: %w", sidecarMessage(body), model.ErrNoStats)
	}
	return model.Stats{}, fmt.Errorf("sidecar /usage: %s: %s", resp.Status, sidecarMessage(body))
}

// olderSidecarUsage is Stats of a sandbox whose sidecar predates GET
// /usage (a pod started from an image older than the control plane).
func olderSidecarUsage(id string) *api.Error {
	return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported,
		"sandbox %s runs a sidecar older than this server, which does not report its usage", id).
		WithHint("the sandbox started before the server was upgraded; `boxkite session fork " + id + "` gives a new sandbox with its files that does")
}

// sidecarMessage is the message of the sidecar's error envelope b, else b.
func sidecarMessage(b []byte) string {
	var env api.ErrorEnvelope
	if json.Unmarshal(b, &env) == nil && env.Error != nil {
		return env.Error.Message
	}
	return string(b)
}
