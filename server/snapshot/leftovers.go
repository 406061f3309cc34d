package snapshot

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Leftovers (session 26): the data and objects no snapshot holds. A take
// whose snapshot its user deleted while it copied loses the row to the
// delete and cleans up after itself (abandon, keys.go), but a take whose
// server then dies does not: what its copy wrote after the delete's own
// drop — the driver's data under the key it claimed, its object in the
// bucket — would stay until a later drop of the same key. So Reconcile
// and Sweep also compare what exists with what the rows name and delete
// the rest:
//
//   - the driver's data (model.SnapshotLister: the local driver's image
//     store, the kube driver's snapshot directory): a key no snapshot that
//     is not deleted holds, pending ones that claimed it included;
//   - the bucket's objects under <prefix>/snapshots/ (Remote.ListKeys): an
//     object whose snapshot is deleted, failed, or has no row;
//   - the copies under way in a store servers share (the kube driver's
//     partial-* files, model.PartialSnapshotLister): one no copy holds,
//     which a server that died mid-copy left. A copy holds its file from
//     its creation until it is renamed or removed, so this needs no row.
//
// A take in flight is safe from it for two reasons. Its row comes first:
// a snapshot is reserved (its row written) before the driver copies, it
// claims its key before the driver keeps or writes data under it
// (model.SnapshotDriver), and its object is put after both; the sweep
// lists what exists before it reads the rows, so anything it lists that a
// live take wrote has a row it then reads. And the data's delete is a
// drop (dropData), which the database orders against claims: a take that
// claims the key after the sweep found it unheld waits for the drop and
// writes its data anew. Still, the sweep deletes only what it found
// unheld for longer than a take may run (takeTimeout, as for the pending
// rows of servers of older versions, orphans.go): a take that broke the
// order (a server of an older version, a driver's import under a deleted
// snapshot's key) has ended by then. It dates a leftover by the first
// sweep that found it unheld, on this server's clock, so it compares no
// two hosts' clocks (and a restart waits the grace again); a sole server
// at its start, when nothing else runs, deletes at once.
//
// It lists at most once per leftoverEvery: Sweep runs at each heartbeat
// (10 s), and a bucket's listing is a paid request. Its failures are
// logged, never returned: a bucket that cannot be listed does not keep
// the server from starting or its sweep of pending rows.

// leftoverEvery is how often the sweep looks for leftovers.
const leftoverEvery = time.Minute

// leftovers is what the sweep found unheld, by when it first did.
type leftovers struct {
	mu     sync.Mutex
	last   time.Time            // the last look
	unheld map[string]time.Time // "data:KEY", "object:KEY" → first found unheld
}

// sweepLeftovers deletes the driver's data and the bucket's objects no
// snapshot holds, once found unheld for takeTimeout (at once for a sole
// server at its start).
func (s *Service) sweepLeftovers(ctx context.Context, start bool) {
	now := s.cfg.Now()
	l := &s.leftovers
	l.mu.Lock()
	defer l.mu.Unlock()
	if !start && !l.last.IsZero() && now.Sub(l.last) < leftoverEvery {
		return
	}
	l.last = now
	lister, _ := s.cfg.Driver.(model.SnapshotLister)
	partials, _ := s.cfg.Driver.(model.PartialSnapshotLister)
	remote := s.porter() != nil
	if lister == nil && partials == nil && !remote {
		return
	}
	// What exists first, the rows after (see above).
	var keys, unheldPartials []string
	var objects []object
	var err error
	if lister != nil {
		if keys, err = lister.SnapshotKeys(ctx); err != nil {
			s.cfg.Log.WarnContext(ctx, "list the driver's snapshots for leftovers", "err", err)
			keys = nil
		}
	}
	if partials != nil {
		if unheldPartials, err = partials.UnheldPartialSnapshots(ctx); err != nil {
			s.cfg.Log.WarnContext(ctx, "list the driver's partial snapshots for leftovers", "err", err)
			unheldPartials = nil
		}
	}
	if remote {
		if objects, err = s.remoteObjects(ctx); err != nil {
			s.cfg.Log.WarnContext(ctx, "list the bucket's snapshots for leftovers", "backend", s.cfg.Remote.Kind(), "err", err)
			objects = nil
		}
	}
	if len(keys) == 0 && len(objects) == 0 && len(unheldPartials) == 0 {
		clear(l.unheld)
		return
	}
	held, named := map[string]bool{}, map[string]bool{}
	if len(keys) > 0 || len(objects) > 0 {
		if held, named, err = s.inUse(ctx); err != nil {
			s.cfg.Log.WarnContext(ctx, "read the snapshots for leftovers", "err", err)
			return
		}
	}
	at := now
	if start && s.cfg.Instances == nil {
		at = now.Add(-s.takeTimeout()) // a sole server at its start: nothing else runs
	}
	found := map[string]time.Time{}
	due := func(name string) bool {
		first, ok := l.unheld[name]
		if !ok || at.Before(first) {
			first = at
		}
		found[name] = first
		return now.Sub(first) >= s.takeTimeout()
	}
	for _, key := range keys {
		if held[key] || !due("data:"+key) {
			continue
		}
		dropped, err := s.drop(ctx, key)
		switch {
		case err != nil:
			s.cfg.Log.ErrorContext(ctx, "delete a leftover snapshot's data", "key", key, "err", err)
		case dropped:
			delete(found, "data:"+key)
			s.cfg.Log.WarnContext(ctx, "deleted snapshot data no snapshot holds (a take cut short)", "key", key)
		}
	}
	for _, obj := range objects {
		if named[obj.id] || !due("object:"+obj.key) {
			continue
		}
		if err := s.cfg.Remote.Delete(ctx, obj.key); err != nil {
			s.cfg.Log.ErrorContext(ctx, "delete a leftover snapshot object", "object", obj.key, "err", err)
			continue
		}
		delete(found, "object:"+obj.key)
		s.cfg.Log.WarnContext(ctx, "deleted a snapshot object no snapshot holds (a take cut short)", "object", obj.key, "snapshot", obj.id)
	}
	for _, name := range unheldPartials {
		if !due("partial:" + name) {
			continue
		}
		if err := partials.DeletePartialSnapshot(ctx, name); err != nil {
			s.cfg.Log.ErrorContext(ctx, "delete a leftover partial snapshot", "file", name, "err", err)
			continue
		}
		delete(found, "partial:"+name)
		s.cfg.Log.WarnContext(ctx, "deleted a partial snapshot no copy holds (a server died mid-copy)", "file", name)
	}
	l.unheld = found // what is held again, or gone, is forgotten
}

// inUse reads the keys the snapshots that are not deleted hold (any
// status: a failed one keeps its data until it is deleted), and the ids
// of those whose object the bucket keeps (pending or completed).
func (s *Service) inUse(ctx context.Context) (held, named map[string]bool, err error) {
	held, named = map[string]bool{}, map[string]bool{}
	for _, status := range []string{api.SnapshotPending, api.SnapshotCompleted, api.SnapshotFailed} {
		sns, err := s.cfg.Store.SnapshotsWithStatus(ctx, status)
		if err != nil {
			return nil, nil, fmt.Errorf("list %s snapshots: %w", status, err)
		}
		for _, sn := range sns {
			if sn.Key != "" {
				held[sn.Key] = true
			}
			if status != api.SnapshotFailed {
				named[sn.ID] = true
			}
		}
	}
	return held, named, nil
}

// remotePrefix is the prefix of every snapshot object (objectKey).
func (s *Service) remotePrefix() string {
	return path.Join(s.cfg.RemotePrefix, "snapshots") + "/"
}

// object is a snapshot object in the bucket: its key, its snapshot's id.
type object struct{ key, id string }

// remoteObjects lists the bucket's snapshot objects: the keys
// <prefix>/snapshots/<account>/<id>/data (objectKey). A key of another
// shape is left alone.
func (s *Service) remoteObjects(ctx context.Context) ([]object, error) {
	var objects []object
	prefix := s.remotePrefix()
	err := s.cfg.Remote.ListKeys(ctx, prefix, func(key string) error {
		parts := strings.Split(strings.TrimPrefix(key, prefix), "/")
		if len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] == "data" {
			objects = append(objects, object{key, parts[1]})
		}
		return nil
	})
	return objects, err
}
