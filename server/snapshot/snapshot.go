// Package snapshot serves snapshots of sandboxes' filesystems, their
// restore into new sandboxes, and forks (issue 22; docs/snapshots.md):
// POST /v1/sandboxes/{id}/snapshots, GET /v1/sandboxes/{id}/snapshots,
// GET /v1/snapshots, GET and DELETE /v1/snapshots/{id}, POST
// /v1/snapshots/{id}/restore and POST /v1/sandboxes/{id}/fork.
//
// It owns the snapshot records and their limits; the driver
// (model.SnapshotDriver) owns the data, and the control plane (Control)
// owns sandboxes: loading the caller's, creating new ones from a
// snapshot, the audit log. A snapshot is recorded pending before the
// driver copies anything and completed after, so a server killed in
// between leaves it pending, and it is marked failed when that server
// starts again or, once the server's heartbeat ended, by another sharing
// the database (orphans.go).
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// Control is what the service needs of the control plane.
type Control interface {
	// Account returns the caller of an authenticated request.
	Account(r *http.Request) *model.Account
	// Sandbox returns the account's sandbox, in any status, or an
	// *api.Error 404 (also for another account's).
	Sandbox(ctx context.Context, accountID, id string) (*model.Sandbox, error)
	// Start creates count sandboxes for acct shaped by from (size,
	// storage, image), their filesystems started from the driver's data
	// under from.Key, and returns them active. label names the first.
	Start(ctx context.Context, acct *model.Account, from *model.Snapshot, label string, count int) ([]*model.Sandbox, error)
	// Audit records operation on sb's audit log (source system).
	Audit(ctx context.Context, sb *model.Sandbox, operation string, detail map[string]any)
	// Hold takes the account's sandbox id's lifecycle turn (the one
	// pause, resume and delete take, in this process), reads the sandbox
	// again and returns it with the turn's release: a delete that comes
	// meanwhile waits for the release.
	Hold(ctx context.Context, accountID, id string) (*model.Sandbox, func(), error)
	// Grants returns what sb was granted (secrets by id, egress): a
	// fork's children and a snapshot's restores inherit them.
	Grants(ctx context.Context, sb *model.Sandbox) (model.Grants, error)
}

// Config configures a Service.
type Config struct {
	Store   model.SnapshotStore
	Driver  model.SnapshotDriver // nil: snapshots are not supported
	Control Control
	// DriverName is recorded with each snapshot ("local", "kube").
	DriverName string
	// Limit is how many snapshots an account may keep; 0 means
	// api.DefaultSnapshotLimit, negative no limit.
	Limit int
	// MaxFork caps a fork's count.
	MaxFork int
	Log     *slog.Logger
	Now     func() time.Time
	// Remote, when set, keeps each snapshot's data in object storage too
	// (remote.go), under RemotePrefix; only drivers that can export their
	// data (model.SnapshotPorter) use it.
	Remote       Remote
	RemotePrefix string
	// UseImage records a snapshot as a user of the image its sandbox
	// booted from (server/imagesapi's Use), under the image store's
	// admission lock, so an image deleted meanwhile is either kept for it
	// or found gone; nil: the server keeps no images.
	UseImage func(ctx context.Context, imageID, user string) error
	// Instance is this server's id, recorded as the owner of the
	// snapshots it takes (orphans.go).
	Instance string
	// Instances holds the heartbeats of the servers sharing the store;
	// nil when this server is its only one (SQLite): every pending
	// snapshot it did not take itself is then a crash's.
	Instances model.InstanceStore
	// Token is this server's heartbeat lease token now (InstanceStore),
	// recorded with the snapshots it reserves (Snapshot.OwnerToken); nil
	// when it keeps no heartbeat.
	Token func() int64

	// claimWaits, in tests, runs each time a snapshot found its key
	// being dropped, before it waits to ask again.
	claimWaits func()
}

// Service is the snapshot subsystem.
type Service struct {
	cfg       Config
	leftovers leftovers // leftovers.go
}

// New returns the service for cfg.
func New(cfg Config) *Service {
	if cfg.Limit == 0 {
		cfg.Limit = api.DefaultSnapshotLimit
	}
	if cfg.MaxFork <= 0 {
		cfg.MaxFork = 10
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg}
}

// maxBody bounds the small JSON bodies of these routes.
const maxBody = 1 << 20

func (s *Service) noDriver() error {
	if s.cfg.Driver == nil {
		return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "this server's driver cannot snapshot sandboxes").
			WithHint("snapshots need the local driver with loop-mounted disks, or the kube driver")
	}
	return nil
}

// live loads the caller's sandbox and checks it holds a filesystem
// (active or paused).
func (s *Service) live(r *http.Request, acct *model.Account) (*model.Sandbox, error) {
	sb, err := s.cfg.Control.Sandbox(r.Context(), acct.ID, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if !sb.Live() {
		return nil, notLive(sb)
	}
	return sb, nil
}

// hold takes sb's lifecycle turn for a copy of its filesystem (Control.Hold)
// and returns it as read under the turn, or why it has nothing to copy.
func (s *Service) hold(ctx context.Context, acct *model.Account, id string) (*model.Sandbox, func(), error) {
	sb, release, err := s.cfg.Control.Hold(ctx, acct.ID, id)
	if err != nil {
		return nil, nil, err
	}
	if !sb.Live() {
		release()
		return nil, nil, notLive(sb)
	}
	return sb, release, nil
}

// notLive is the answer to a copy of sb, which has no filesystem left.
func notLive(sb *model.Sandbox) error {
	return api.Errorf(http.StatusConflict, api.CodeConflict, "sandbox %s is %s: it has no filesystem left", sb.ID, sb.Status).
		WithHint("snapshot a sandbox that is active or paused")
}

// copyFailed is the answer to a driver copy of sb that failed: 409 when
// the sandbox is gone since (removed by another server sharing the
// database, which the turn does not order), 503 when the copy to read is
// in another server's state directory (a paused sandbox's on kube), else
// 502. cause is the driver's error; op is what failed ("take the
// snapshot"), during the same as a clause ("the snapshot was taken").
func (s *Service) copyFailed(ctx context.Context, sb *model.Sandbox, cause error, op, during string) error {
	if now, err := s.cfg.Control.Sandbox(context.WithoutCancel(ctx), sb.AccountID, sb.ID); err == nil && !now.Live() {
		return api.Errorf(http.StatusConflict, api.CodeConflict, "sandbox %s was %s while %s", sb.ID, now.Status, during).
			WithHint("a deleted sandbox's files are gone; take snapshots before deleting the sandbox")
	}
	if errors.Is(cause, model.ErrCopyElsewhere) {
		return api.Errorf(http.StatusServiceUnavailable, api.CodeServiceUnavailable,
			"could not %s: sandbox %s was paused through another server, which keeps its workspace in a state directory this one does not share", op, sb.ID).
			WithHint(`retry: another replica may answer; for good, the operator shares the state directory between replicas (a ReadWriteMany claim, docs/kubernetes.md, "The state directory")`)
	}
	return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "could not %s", op).
		WithHint("retry; if it keeps failing, the server log has the cause under this request id")
}

// checkLabel refuses a label longer than most bytes, or one
// api.CheckLabel refuses (control characters, only whitespace). A NUL
// character, which PostgreSQL's text cannot hold, never gets here:
// httpx.DecodeJSON refuses it in any field first (422 naming the field).
func checkLabel(label string, most int) error {
	if len(label) > most {
		return httpx.Invalid("label", fmt.Sprintf("label is longer than %d characters", most), "")
	}
	return api.CheckLabel(label)
}

func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateSnapshotRequest
	if err := httpx.DecodeJSON(w, r, &req, maxBody); err != nil {
		return err
	}
	if err := checkLabel(req.Label, 200); err != nil {
		return err
	}
	acct := s.cfg.Control.Account(r)
	sb, err := s.live(r, acct)
	if err != nil {
		return err
	}
	if err := s.noDriver(); err != nil {
		return err
	}
	sn, err := s.Take(r.Context(), acct, sb, req.Label)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, sn.ToAPI())
	return nil
}

// Take snapshots sb for acct: recorded pending, copied by the driver with
// the sandbox's calls held out, then recorded completed (or failed). It
// holds the sandbox's lifecycle turn until the driver's copy is done, so
// a delete (or a pause, a resume) that comes meanwhile waits for it.
func (s *Service) Take(ctx context.Context, acct *model.Account, sb *model.Sandbox, label string) (*model.Snapshot, error) {
	if err := s.noDriver(); err != nil {
		return nil, err
	}
	sb, held, err := s.hold(ctx, acct, sb.ID)
	if err != nil {
		return nil, err
	}
	release := sync.OnceFunc(held)
	defer release()
	imageID, err := s.cfg.Store.SandboxImageID(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	grants, err := s.cfg.Control.Grants(ctx, sb)
	if err != nil {
		return nil, err
	}
	sn := &model.Snapshot{
		ID: model.NewID(), AccountID: acct.ID, SandboxID: sb.ID, Label: label, Status: api.SnapshotPending,
		Driver: s.cfg.DriverName, Size: sb.Size, StorageGB: sb.StorageGB, ImageID: imageID, Grants: grants,
		Owner: s.cfg.Instance, OwnerToken: s.token(), CreatedAt: s.cfg.Now(),
	}
	if err := s.cfg.Store.ReserveSnapshot(ctx, sn, max(s.cfg.Limit, 0)); err != nil {
		if le, ok := errors.AsType[*model.SnapshotLimitError](err); ok {
			return nil, &api.Error{
				Status: http.StatusTooManyRequests, Code: api.CodeSnapshotLimitReached,
				Message: fmt.Sprintf("the account holds %d snapshots, the most it may keep", le.Count),
				Hint:    "delete one with `boxkite snapshots rm ID` (`boxkite snapshots ls` lists them)",
				Details: map[string]any{"limit": le.Limit, "count": le.Count},
			}
		}
		return nil, fmt.Errorf("record snapshot: %w", err)
	}
	if err := s.useImage(ctx, sn); err != nil {
		return nil, err
	}
	// The copy finishes even if the client hangs up: the row must end up
	// telling the truth.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.takeTimeout())
	defer cancel()
	ref, done, err, stored, uerr := s.copyAndRecord(ctx, sb, sn, release)
	if _, lost := errors.AsType[*api.Error](uerr); lost {
		return nil, uerr // deleted or failed meanwhile: what it made is gone
	}
	if stored != nil {
		s.cfg.Log.ErrorContext(ctx, "snapshot not stored in object storage: failed", "sandbox", sb.ID, "snapshot", sn.ID, "err", stored)
		if uerr == nil {
			s.dropData(ctx, ref.Key)
		}
		return nil, errStorageFailed
	}
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "driver snapshot failed", "sandbox", sb.ID, "snapshot", sn.ID, "err", err)
		return nil, s.copyFailed(ctx, sb, err, "take the snapshot", "the snapshot was taken")
	}
	if uerr != nil {
		return nil, fmt.Errorf("record snapshot: %w", uerr)
	}
	detail := map[string]any{"snapshot_id": done.ID, "size_bytes": done.SizeBytes, "method": done.Method}
	if s.porter() != nil {
		detail["storage"] = s.cfg.Remote.Kind()
	}
	s.cfg.Control.Audit(ctx, sb, "snapshot_created", detail)
	return done, nil
}

// takeTimeout bounds a take's copy and record, from its reservation.
func (s *Service) takeTimeout() time.Duration {
	timeout := 5 * time.Minute
	if s.porter() != nil {
		timeout += remoteTimeout // the copy into the bucket
	}
	return timeout
}

// useImage records pending snapshot sn as a user of its image; one whose
// image was deleted meanwhile is recorded failed.
func (s *Service) useImage(ctx context.Context, sn *model.Snapshot) error {
	if sn.ImageID == "" || s.cfg.UseImage == nil {
		return nil
	}
	err := s.cfg.UseImage(ctx, sn.ImageID, sn.ID)
	if err == nil {
		return nil
	}
	if _, uerr := s.cfg.Store.UpdateSnapshot(context.WithoutCancel(ctx), sn.ID, func(sn *model.Snapshot) error {
		sn.Status = api.SnapshotFailed
		return nil
	}); uerr != nil {
		s.cfg.Log.ErrorContext(ctx, "record a snapshot failed", "snapshot", sn.ID, "err", uerr)
	}
	if _, ok := errors.AsType[*api.Error](err); ok {
		return api.Errorf(http.StatusConflict, api.CodeConflict, "the image %s the sandbox booted from was deleted while the snapshot was taken", sn.ImageID).
			WithHint("a snapshot restores onto its sandbox's image; this one could not be kept")
	}
	return fmt.Errorf("record the snapshot's image: %w", err)
}

func (s *Service) listOfSandbox(w http.ResponseWriter, r *http.Request) error {
	acct := s.cfg.Control.Account(r)
	sb, err := s.cfg.Control.Sandbox(r.Context(), acct.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.writeList(w, r, acct, sb.ID)
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	return s.writeList(w, r, s.cfg.Control.Account(r), "")
}

func (s *Service) writeList(w http.ResponseWriter, r *http.Request, acct *model.Account, sandboxID string) error {
	sns, err := s.cfg.Store.ListSnapshots(r.Context(), acct.ID, sandboxID)
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	out := make([]api.Snapshot, len(sns))
	for i, sn := range sns {
		out[i] = sn.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// load returns the caller's snapshot named in the path; another account's
// is not found.
func (s *Service) load(r *http.Request, acct *model.Account) (*model.Snapshot, error) {
	id := r.PathValue("id")
	sn, err := s.cfg.Store.Snapshot(r.Context(), acct.ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "snapshot %s not found", id).
			WithHint("list your snapshots with `boxkite snapshots ls`")
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	return sn, nil
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	sn, err := s.load(r, s.cfg.Control.Account(r))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, sn.ToAPI())
	return nil
}

func (s *Service) delete(w http.ResponseWriter, r *http.Request) error {
	sn, err := s.load(r, s.cfg.Control.Account(r))
	if err != nil {
		return err
	}
	if err := s.Delete(r.Context(), sn); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Delete marks sn deleted and drops its data unless another snapshot
// holds it.
func (s *Service) Delete(ctx context.Context, sn *model.Snapshot) error {
	ctx = context.WithoutCancel(ctx)
	now := s.cfg.Now()
	if _, err := s.cfg.Store.UpdateSnapshot(ctx, sn.ID, func(sn *model.Snapshot) error {
		sn.DeletedAt = &now
		return nil
	}); err != nil {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	s.dropData(ctx, sn.Key)
	s.dropRemote(ctx, sn)
	return nil
}

func (s *Service) restore(w http.ResponseWriter, r *http.Request) error {
	var req api.RestoreSnapshotRequest
	if err := httpx.DecodeJSON(w, r, &req, maxBody); err != nil {
		return err
	}
	if err := checkLabel(req.Label, model.MaxLabelLen); err != nil { // the new sandbox's
		return err
	}
	acct := s.cfg.Control.Account(r)
	sn, err := s.load(r, acct)
	if err != nil {
		return err
	}
	sb, err := s.Restore(r.Context(), acct, sn, req.Label)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, sb.ToAPI())
	return nil
}

// Restore starts a new sandbox of acct from sn.
func (s *Service) Restore(ctx context.Context, acct *model.Account, sn *model.Snapshot, label string) (*model.Sandbox, error) {
	if err := s.noDriver(); err != nil {
		return nil, err
	}
	if sn.Status != api.SnapshotCompleted {
		return nil, api.Errorf(http.StatusConflict, api.CodeConflict, "snapshot %s is %s", sn.ID, sn.Status).
			WithHint("restore a completed snapshot; take a new one with `boxkite session snapshot`")
	}
	if err := s.fetch(ctx, sn); err != nil {
		s.cfg.Log.ErrorContext(ctx, "fetch snapshot data for a restore", "snapshot", sn.ID, "err", err)
		return nil, errRestoreFetch(sn, err)
	}
	sbs, err := s.cfg.Control.Start(ctx, acct, sn, label, 1)
	if err != nil {
		return nil, err
	}
	return sbs[0], nil
}

func (s *Service) fork(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Count *int `json:"count"` // absent: 1; an explicit 0 is refused
	}
	if err := httpx.DecodeJSON(w, r, &req, maxBody); err != nil {
		return err
	}
	count := 1
	if req.Count != nil {
		count = *req.Count
	}
	if count < 1 || count > s.cfg.MaxFork {
		return httpx.Invalid("count", fmt.Sprintf("count must be between 1 and %d, got %d", s.cfg.MaxFork, count),
			"omit count for one fork")
	}
	acct := s.cfg.Control.Account(r)
	sb, err := s.live(r, acct)
	if err != nil {
		return err
	}
	if err := s.noDriver(); err != nil {
		return err
	}
	children, err := s.Fork(r.Context(), acct, sb, count)
	if err != nil {
		return err
	}
	out := make([]api.Sandbox, len(children))
	for i, c := range children {
		out[i] = c.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// Fork creates count children of sb from a transient snapshot of it,
// which is deleted once they started.
func (s *Service) Fork(ctx context.Context, acct *model.Account, sb *model.Sandbox, count int) ([]*model.Sandbox, error) {
	if err := s.noDriver(); err != nil {
		return nil, err
	}
	imageID, err := s.cfg.Store.SandboxImageID(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	grants, err := s.cfg.Control.Grants(ctx, sb)
	if err != nil {
		return nil, err
	}
	ref, err := s.forkCopy(ctx, acct, sb)
	if err != nil {
		return nil, err
	}
	// Deleted once the children started, off the answer's path (a
	// reflinked image's unlink walks its extents).
	defer func() {
		go func(ctx context.Context) {
			if err := s.cfg.Driver.DeleteSnapshot(ctx, ref.Key); err != nil {
				s.cfg.Log.ErrorContext(ctx, "delete a fork's transient snapshot", "key", ref.Key, "err", err)
			}
		}(context.WithoutCancel(ctx))
	}()
	from := &model.Snapshot{
		Key: ref.Key, SandboxID: sb.ID, Size: sb.Size, StorageGB: sb.StorageGB, ImageID: imageID, Grants: grants,
		MountPoints: ref.MountPoints,
	}
	children, err := s.cfg.Control.Start(ctx, acct, from, "", count)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(children))
	for i, c := range children {
		ids[i] = c.ID
	}
	s.cfg.Control.Audit(ctx, sb, "sandbox_forked", map[string]any{"children": ids, "method": ref.Method})
	return children, nil
}

// forkCopy copies sb's filesystem for a fork into a transient snapshot,
// under the sandbox's lifecycle turn (a delete waits for the copy).
func (s *Service) forkCopy(ctx context.Context, acct *model.Account, sb *model.Sandbox) (model.SnapshotRef, error) {
	sb, release, err := s.hold(ctx, acct, sb.ID)
	if err != nil {
		return model.SnapshotRef{}, err
	}
	defer release()
	ref, err := s.cfg.Driver.Snapshot(ctx, sb.ID, true, nil)
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "driver snapshot for a fork failed", "sandbox", sb.ID, "err", err)
		return model.SnapshotRef{}, s.copyFailed(ctx, sb, err, "copy the sandbox's filesystem for the fork", "the fork copied the sandbox's filesystem")
	}
	return ref, nil
}
