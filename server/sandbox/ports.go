package sandbox

import (
	"context"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/model"
)

// What the snapshot and preview services need of the lifecycle
// (snapshot.Control, preview.ControlPlane): the server hands them these.

// SnapshotControl is the lifecycle as server/snapshot consumes it
// (snapshot.Control).
func (s *Service) SnapshotControl() SnapshotControl { return SnapshotControl{s} }

// SnapshotControl implements snapshot.Control.
type SnapshotControl struct{ s *Service }

// Account returns the caller of an authenticated request.
func (SnapshotControl) Account(r *http.Request) *model.Account { return authz.Account(r.Context()) }

// Sandbox returns the account's sandbox, in any status (Find).
func (c SnapshotControl) Sandbox(ctx context.Context, accountID, id string) (*model.Sandbox, error) {
	return c.s.Find(ctx, accountID, id)
}

// Start creates count sandboxes for acct from the snapshot from.
func (c SnapshotControl) Start(ctx context.Context, acct *model.Account, from *model.Snapshot, label string, count int) ([]*model.Sandbox, error) {
	return c.s.Start(ctx, acct, StartSpec{
		Request: api.CreateSandboxRequest{Label: label, Size: from.Size, StorageGB: from.StorageGB, Count: count},
		ImageID: from.ImageID, FromSnapshot: from.Key, Grants: from.Grants, MountPoints: from.MountPoints,
	})
}

// Grants returns what sandbox sb was granted (secrets that still exist,
// by id; egress), which its forks and snapshots keep.
func (c SnapshotControl) Grants(ctx context.Context, sb *model.Sandbox) (model.Grants, error) {
	secrets, err := c.s.d.Secrets.Granted(ctx, sb.ID)
	if err != nil {
		return model.Grants{}, err
	}
	egress, err := c.s.store.SandboxEgress(ctx, sb.ID)
	if err != nil {
		return model.Grants{}, fmt.Errorf("read egress grants: %w", err)
	}
	return model.Grants{Secrets: secrets, Egress: egress}, nil
}

// Hold takes sandbox id's lifecycle lock and, with other servers on the
// store, its lease (pause, resume and destroy take them too; lease.go),
// reads the account's sandbox again under them and returns it with their
// release. The lease is renewed while the snapshot's copy runs.
func (c SnapshotControl) Hold(ctx context.Context, accountID, id string) (*model.Sandbox, func(), error) {
	release, err := c.s.lockLifecycle(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	sb, err := c.s.Find(ctx, accountID, id)
	if err != nil {
		release()
		return nil, nil, err
	}
	return sb, release, nil
}

// Audit records operation on sb's audit log, from the system; a failure
// waits in the audit gate.
func (c SnapshotControl) Audit(ctx context.Context, sb *model.Sandbox, operation string, detail map[string]any) {
	_ = c.s.audit(ctx, audit.Record{
		Sandbox: sb, Source: api.LogSourceSystem, Operation: operation, Detail: detail, Started: c.s.now(),
	})
}

// PreviewControl is the lifecycle as server/preview consumes it
// (preview.ControlPlane).
func (s *Service) PreviewControl() PreviewControl { return PreviewControl{s} }

// PreviewControl implements preview.ControlPlane.
type PreviewControl struct{ s *Service }

// Sidecar returns a round tripper to the sidecar of the account's active
// sandbox that sets the sidecar's token on every request.
func (c PreviewControl) Sidecar(ctx context.Context, accountID, sandboxID string) (http.RoundTripper, error) {
	sb, err := c.s.Find(ctx, accountID, sandboxID)
	if err != nil {
		return nil, err
	}
	if !sb.Active() {
		return nil, NotActive(sb)
	}
	if err := c.s.FrozenAnswer(sb.ID); err != nil {
		return nil, err
	}
	cl, err := c.s.sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("sidecar client: %w", err)
	}
	return sidecarAuth{cl.Transport, sb.Endpoint.Token}, nil
}

// Audit appends an entry to the sandbox's audit log.
func (c PreviewControl) Audit(ctx context.Context, accountID, sandboxID, operation string, detail map[string]any) error {
	sb, err := c.s.store.Sandbox(ctx, accountID, sandboxID)
	if err != nil {
		return fmt.Errorf("load sandbox: %w", err)
	}
	return c.s.audit(ctx, audit.Record{Sandbox: sb, Operation: operation, Detail: detail, Started: c.s.now()})
}

// sidecarAuth sets a sandbox's sidecar token on each request.
type sidecarAuth struct {
	rt    http.RoundTripper
	token string
}

func (a sidecarAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(api.HeaderSidecarToken, a.token)
	return a.rt.RoundTrip(r)
}
