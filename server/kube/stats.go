package kube

import (
	"context"
	"encoding/json"
	"errors"
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
//
// E2B's getMetrics polls it, so the sidecar is kept (keptSidecars): a
// call is one request over a kept connection, and only the first, or the
// first after the pod changed, looks the pod and its Secret up. A kept
// sidecar that fails the request is dropped and looked up again once: a
// pod another replica paused, resumed or deleted.
func (d *Driver) Stats(ctx context.Context, id string) (model.Stats, error) {
	u, _, err := d.usage(ctx, id)
	if err != nil {
		return model.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, err)
	}
	return model.Stats{MemoryBytes: u.MemoryBytes, MemoryAnonBytes: u.MemoryAnonBytes, Pids: u.Pids, CPUMicros: u.CPUMicros}, nil
}

// usage asks sandbox id's kept sidecar for GET /usage, and returns the
// sidecar it asked: Stats's and MemoryKilled's.
func (d *Driver) usage(ctx context.Context, id string) (api.SidecarUsage, *keptSidecar, error) {
	for retried := false; ; retried = true {
		s, cached, err := d.kept.get(ctx, id, d.runningPod)
		if err != nil {
			return api.SidecarUsage{}, nil, err
		}
		u, err := sidecarUsage(ctx, s.hc, s.ep, id)
		if err == nil || isAPIError(err) || errors.Is(err, model.ErrNoStats) {
			return u, s, err
		}
		d.kept.forget(id, s)
		if !cached || retried || ctx.Err() != nil {
			return api.SidecarUsage{}, nil, err
		}
	}
}

// isAPIError reports whether err is an *api.Error: an answer, not a
// sidecar that could not be reached.
func isAPIError(err error) bool {
	_, ok := errors.AsType[*api.Error](err)
	return ok
}

// sidecarUsage asks the sidecar at ep of sandbox id for GET /usage
// through hc.
func sidecarUsage(ctx context.Context, hc *http.Client, ep model.Endpoint, id string) (api.SidecarUsage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ep.Address+"/usage", nil)
	if err != nil {
		return api.SidecarUsage{}, fmt.Errorf("sidecar /usage: %w", err)
	}
	req.Header.Set(api.HeaderSidecarToken, ep.Token)
	resp, err := hc.Do(req)
	if err != nil {
		return api.SidecarUsage{}, fmt.Errorf("sidecar /usage: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return api.SidecarUsage{}, fmt.Errorf("sidecar /usage: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		var u api.SidecarUsage
		if err := json.Unmarshal(body, &u); err != nil {
			return api.SidecarUsage{}, fmt.Errorf("sidecar /usage: decode: %w", err)
		}
		return u, nil
	case resp.StatusCode == http.StatusNotFound && api.SidecarProtocolOf(resp.Header) < usageProtocol:
		return api.SidecarUsage{}, olderSidecarUsage(id)
	case resp.StatusCode == http.StatusNotImplemented:
		return api.SidecarUsage{}, fmt.Errorf("sidecar /usage: %s: %w", sidecarMessage(body), model.ErrNoStats)
	}
	return api.SidecarUsage{}, fmt.Errorf("sidecar /usage: %s: %s", resp.Status, sidecarMessage(body))
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
