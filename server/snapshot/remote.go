package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Snapshots in object storage. With a Remote configured and a driver that
// can export its data (model.SnapshotPorter), a snapshot is completed only
// once its data is in the bucket, under
// <prefix>/snapshots/<account>/<snapshot id>/data (one object per
// snapshot: driver keys are content addresses of one host's store, not of
// the bucket). The driver's own copy stays as a cache; a restore whose
// driver lacks the data (another host, a replaced host, another kube
// control plane with its own snapshot directory) imports it from the
// bucket first. Deleting the snapshot deletes its object. Transient
// snapshots (forks) never leave the driver.

// Remote is the object store snapshots are kept in: storagesync.Backend
// is one, given ListKeys (the server adapts its List).
type Remote interface {
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
	// ListKeys calls fn with the key of each object whose key starts
	// with prefix; an error from fn stops it (leftovers.go).
	ListKeys(ctx context.Context, prefix string, fn func(key string) error) error
	Kind() string
}

// remoteTimeout bounds one copy of a snapshot's data to or from the bucket.
const remoteTimeout = 30 * time.Minute

// porter is the driver when snapshots go to the bucket, else nil.
func (s *Service) porter() model.SnapshotPorter {
	if s.cfg.Remote == nil {
		return nil
	}
	p, _ := s.cfg.Driver.(model.SnapshotPorter)
	return p
}

// objectKey is the object holding sn's data.
func (s *Service) objectKey(sn *model.Snapshot) string {
	return path.Join(s.cfg.RemotePrefix, "snapshots", sn.AccountID, sn.ID, "data")
}

// upload copies the driver's data under ref.Key to sn's object.
func (s *Service) upload(ctx context.Context, p model.SnapshotPorter, sn *model.Snapshot, key string) error {
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	rc, size, err := p.ExportSnapshot(ctx, key)
	if err != nil {
		return fmt.Errorf("export snapshot: %w", err)
	}
	defer rc.Close()
	if err := s.cfg.Remote.Put(ctx, s.objectKey(sn), rc, size); err != nil {
		return fmt.Errorf("store snapshot in %s: %w", s.cfg.Remote.Kind(), err)
	}
	return nil
}

// fetch makes sure the driver holds sn's data, importing it from the
// bucket when it does not.
func (s *Service) fetch(ctx context.Context, sn *model.Snapshot) error {
	p := s.porter()
	if p == nil {
		return nil
	}
	ok, err := p.HasSnapshot(ctx, sn.Key)
	if err != nil || ok {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), remoteTimeout)
	defer cancel()
	rc, err := s.cfg.Remote.Get(ctx, s.objectKey(sn))
	if err != nil {
		return fmt.Errorf("read snapshot from %s: %w", s.cfg.Remote.Kind(), err)
	}
	defer rc.Close()
	if err := p.ImportSnapshot(ctx, sn.Key, rc); err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	s.cfg.Log.InfoContext(ctx, "snapshot imported from object storage", "snapshot", sn.ID, "backend", s.cfg.Remote.Kind())
	return nil
}

// dropRemote deletes sn's object; a failure leaves it behind, logged.
func (s *Service) dropRemote(ctx context.Context, sn *model.Snapshot) {
	if s.porter() == nil || sn.Key == "" {
		return
	}
	if err := s.cfg.Remote.Delete(ctx, s.objectKey(sn)); err != nil {
		s.cfg.Log.ErrorContext(ctx, "delete snapshot from object storage", "snapshot", sn.ID, "err", err)
	}
}

// dropPartialRemote deletes what a snapshot a crash interrupted may have
// left in the bucket (its copy finished, its row not yet completed).
func (s *Service) dropPartialRemote(ctx context.Context, sn *model.Snapshot) {
	if s.porter() == nil {
		return
	}
	if err := s.cfg.Remote.Delete(ctx, s.objectKey(sn)); err != nil {
		s.cfg.Log.WarnContext(ctx, "delete an interrupted snapshot's object", "snapshot", sn.ID, "err", err)
	}
}

// errStorageFailed is the answer when the bucket refused a snapshot's data.
var errStorageFailed = api.Errorf(http.StatusBadGateway, api.CodeStorageFailed, "the snapshot could not be stored in object storage").
	WithHint("retry later; the server log has the cause under this request id")

// errRestoreFetch is the answer when a snapshot's data is neither here nor
// in the bucket.
func errRestoreFetch(sn *model.Snapshot, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return api.Errorf(http.StatusBadGateway, api.CodeStorageFailed, "the data of snapshot %s could not be read from object storage", sn.ID).
		WithHint("retry later; the server log has the cause under this request id")
}
