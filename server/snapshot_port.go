package server

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sandbox"
	"github.com/boxkite/boxkite/server/snapshot"
)

// The snapshot service's view of the control plane (snapshot.Control),
// and its wiring: the service is server/snapshot, this is the port.

// newSnapshots builds the snapshot service on s's store and driver.
func (s *Server) newSnapshots() *snapshot.Service {
	d := s.baseDriver()
	sd, _ := d.(model.SnapshotDriver)
	return snapshot.New(snapshot.Config{
		Store: s.store, Driver: sd, Control: snapshotPort{s}, DriverName: s.cfg.DriverName,
		Limit: s.cfg.SnapshotLimit, MaxFork: s.cfg.MaxCount, Log: s.log, Now: func() time.Time { return s.now() },
	})
}

type snapshotPort struct{ s *Server }

func (p snapshotPort) Account(r *http.Request) *model.Account { return accountFrom(r.Context()) }

func (p snapshotPort) Sandbox(ctx context.Context, accountID, id string) (*model.Sandbox, error) {
	return p.s.sandboxes.Find(ctx, accountID, id)
}

func (p snapshotPort) Start(ctx context.Context, acct *model.Account, from *model.Snapshot, label string, count int) ([]*model.Sandbox, error) {
	return p.s.sandboxes.Start(ctx, acct, sandbox.StartSpec{
		Request: api.CreateSandboxRequest{Label: label, Size: from.Size, StorageGB: from.StorageGB, Count: count},
		ImageID: from.ImageID, FromSnapshot: from.Key, AdmitHost: true,
	})
}

func (p snapshotPort) Audit(ctx context.Context, sb *model.Sandbox, operation string, detail map[string]any) {
	_ = p.s.audit(ctx, audit.Record{ // a failure waits in the audit gate
		Sandbox: sb, Source: api.LogSourceSystem, Operation: operation, Detail: detail, Started: p.s.now(),
	})
}
