package server

import (
	"context"

	"github.com/boxkite/boxkite/server/internal/metrics"
	"github.com/boxkite/boxkite/server/model"
)

// MetricsWriter is implemented by drivers with metrics of their own (the
// kube driver's warm pool); /metrics appends them.
type MetricsWriter = metrics.Writer

// baseDriver is the driver behind countingDriver, for its optional
// capabilities (model.StatsDriver, model.PauseDriver, …): the wrapper
// counts sandbox operations only.
func (s *Server) baseDriver() model.Driver {
	if cd, ok := s.driver.(countingDriver); ok {
		return cd.Driver
	}
	return s.driver
}

// countingDriver counts the sandboxes the driver starts and tears down.
type countingDriver struct {
	model.Driver
	m *metrics.Metrics
}

func (d countingDriver) Create(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
	ep, err := d.Driver.Create(ctx, spec)
	if err == nil {
		d.m.SandboxCreated()
	}
	return ep, err
}

func (d countingDriver) Delete(ctx context.Context, id string) error {
	err := d.Driver.Delete(ctx, id)
	if err == nil {
		d.m.SandboxDeleted()
	}
	return err
}

// ClaimWarm counts a sandbox the driver hands out from its warm pool
// (model.WarmClaimer) as started.
func (d countingDriver) ClaimWarm(ctx context.Context, spec model.Spec, via model.SidecarClients, record func(model.Endpoint) error) (model.Endpoint, bool, error) {
	w, ok := d.Driver.(model.WarmClaimer)
	if !ok {
		return model.Endpoint{}, false, nil
	}
	ep, ok, err := w.ClaimWarm(ctx, spec, via, record)
	if ok && err == nil {
		d.m.SandboxCreated()
	}
	return ep, ok, err
}
