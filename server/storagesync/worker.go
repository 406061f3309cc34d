package storagesync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Run flushes due sandboxes until ctx ends: those with queued writes at
// once, every sandbox each quarter of the Interval (after StableFor while
// its journal keeps finding changes), none before its backoff has passed.
// It also deletes the files of destroyed sandboxes past their retention.
func (s *Service) Run(ctx context.Context) {
	sem := make(chan struct{}, s.d.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(tick)
	defer t.Stop()
	lastSweep := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
		now := s.d.Now()
		if s.d.Retention > 0 && now.Sub(lastSweep) >= janitorEvery {
			lastSweep = now
			s.sweep(ctx)
		}
		states, err := s.d.Store.SyncStates(ctx, StateSyncing)
		if err != nil {
			s.d.Log.ErrorContext(ctx, "list storage syncs", "err", err)
			continue
		}
		for _, st := range states {
			if !s.due(st, now) {
				continue
			}
			s.mu.Lock()
			s.busy[st.SandboxID] = true
			s.mu.Unlock()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				s.runOne(ctx, st)
			}()
		}
	}
}

// due reports whether st should be flushed now.
func (s *Service) due(st *State, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy[st.SandboxID] || now.Before(st.NextAttemptAt) {
		return false
	}
	if at, ok := s.settles[st.SandboxID]; ok && !now.Before(at) {
		return true // a file found changing has settled
	}
	last, ok := s.scanned[st.SandboxID]
	every := s.scan
	if tr, ok := s.tracks[st.SandboxID]; ok && tr.active {
		every = s.stable // reconcile sooner while commands write: the check is cheap
	}
	return st.Pending > 0 || !ok || now.Sub(last) >= every
}

func (s *Service) runOne(ctx context.Context, st *State) {
	defer func() {
		s.mu.Lock()
		delete(s.busy, st.SandboxID)
		s.mu.Unlock()
	}()
	defer s.lock(st.SandboxID)()
	cur, err := s.d.Store.SyncState(ctx, st.SandboxID)
	if err != nil || cur.State != StateSyncing {
		return // destroyed or deleted meanwhile
	}
	fctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if s.needsVerify(cur.SandboxID) {
		// This server's first flush of the sandbox: check the index
		// against the bucket (verify.go).
		if _, err := s.verify(fctx, cur); err != nil {
			if ctx.Err() == nil {
				s.bucketGone(fctx, err) // made again: the retry refills it
				s.record(ctx, cur, err)
			}
			return
		}
	}
	started := s.d.Now()
	res, err := s.flush(fctx, cur, false)
	if err != nil && ctx.Err() == nil {
		s.bucketGone(fctx, err)
	}
	s.d.Log.DebugContext(ctx, "storage flush", "sandbox", st.SandboxID, "uploaded", res.Uploaded, "bytes", res.Bytes,
		"deleted", res.Deleted, "deferred", res.Deferred, "skipped", res.Skipped, "took", s.d.Now().Sub(started), "failed", err != nil)
	if ctx.Err() != nil {
		return // shutting down: the next server picks it up
	}
	s.mu.Lock()
	s.scanned[st.SandboxID] = started
	delete(s.settles, st.SandboxID)
	if err == nil && !res.Settled.IsZero() {
		// Files still changing: look again once the first has settled.
		s.settles[st.SandboxID] = res.Settled
	}
	s.mu.Unlock()
	if err == nil && res.Unchanged && cur.Attempts == 0 && s.d.Now().Sub(cur.LastFlushAt) < s.d.Interval {
		return // nothing changed: no database write either
	}
	s.record(ctx, cur, err)
}

// Flush forces a flush of a running sandbox now (POST …/sync/flush),
// without waiting for files to be stable. It first checks the index of
// stored files against the bucket, so files whose object is gone are
// uploaded again (verify.go).
func (s *Service) Flush(ctx context.Context, sb *model.Sandbox) (*State, Result, error) {
	defer s.lock(sb.ID)()
	st, err := s.d.Store.SyncState(ctx, sb.ID)
	if err != nil {
		return nil, Result{}, err
	}
	if st.State != StateSyncing {
		return st, Result{}, nil
	}
	res, ferr := s.checkAndFlush(ctx, st)
	if s.bucketGone(ctx, ferr) {
		res, ferr = s.checkAndFlush(ctx, st) // into the bucket just made
	}
	s.mu.Lock()
	s.scanned[sb.ID] = s.d.Now()
	s.mu.Unlock()
	s.record(ctx, st, ferr)
	return st, res, ferr
}

// checkAndFlush checks the sandbox's index against the bucket and
// flushes it in full (a forced flush).
func (s *Service) checkAndFlush(ctx context.Context, st *State) (Result, error) {
	if _, err := s.verify(ctx, st); err != nil {
		return Result{}, err
	}
	return s.flush(ctx, st, true)
}

// Final flushes a sandbox about to be destroyed, bounded by FinalTimeout,
// records the outcome in its audit log, and stops syncing it. A sandbox
// that was lost (nothing left to read) only stops syncing.
func (s *Service) Final(ctx context.Context, sb *model.Sandbox, readable bool) {
	defer s.lock(sb.ID)()
	st, err := s.d.Store.SyncState(ctx, sb.ID)
	if err != nil {
		if !errors.Is(err, ErrNoSync) {
			s.d.Log.ErrorContext(ctx, "load storage sync", "sandbox", sb.ID, "err", err)
		}
		return
	}
	if st.State != StateSyncing {
		return
	}
	started := s.d.Now()
	var res Result
	ferr := errors.New("the sandbox's files could not be read")
	if readable {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.FinalTimeout)
		if s.needsVerify(sb.ID) {
			// Not flushed by this server yet: check the index first; a
			// failure here is the flush's to report.
			if _, verr := s.verify(fctx, st); verr != nil {
				s.d.Log.WarnContext(ctx, "check stored files before the final flush", "sandbox", sb.ID, "err", s.redact(verr.Error()))
			}
		}
		res, ferr = s.flush(fctx, st, true)
		if s.bucketGone(fctx, ferr) {
			res, ferr = s.checkAndFlush(fctx, st)
		}
		if ferr == nil && fctx.Err() != nil {
			ferr = fctx.Err()
		}
		cancel()
		if errors.Is(ferr, context.DeadlineExceeded) {
			ferr = fmt.Errorf("the final flush did not finish within %s", s.d.FinalTimeout)
		}
	}
	s.record(ctx, st, ferr)
	s.mu.Lock()
	delete(s.tracks, sb.ID)
	delete(s.verified, sb.ID)
	delete(s.names, sb.ID)
	s.mu.Unlock()
	st.State, st.FinalDone = StateFinal, ferr == nil && res.Complete
	if s.d.Retention > 0 {
		st.RetainUntil = s.d.Now().Add(s.d.Retention)
	}
	if err := s.d.Store.UpdateSyncState(context.WithoutCancel(ctx), st); err != nil {
		s.d.Log.ErrorContext(ctx, "record final storage sync", "sandbox", sb.ID, "err", err)
	}
	if s.d.Audit == nil {
		return
	}
	detail := map[string]any{
		"backend": s.Kind(), "uploaded": res.Uploaded, "bytes": res.Bytes, "deleted": res.Deleted,
		"complete": st.FinalDone, "duration_ms": s.d.Now().Sub(started).Milliseconds(),
	}
	if ferr != nil {
		detail["error"] = s.redact(ferr.Error())
	}
	if err := s.d.Audit(context.WithoutCancel(ctx), sb, "storage_final_flush", detail); err != nil {
		s.d.Log.ErrorContext(ctx, "audit final storage flush", "sandbox", sb.ID, "err", err)
	}
}

// DeleteStored deletes a sandbox's stored files and stops syncing it
// (DELETE …/storage). A running sandbox is synced again from scratch.
func (s *Service) DeleteStored(ctx context.Context, sb *model.Sandbox) error {
	defer s.lock(sb.ID)()
	st, err := s.d.Store.SyncState(ctx, sb.ID)
	if err != nil {
		return err
	}
	if err := s.deleteObjects(ctx, st); err != nil {
		return err
	}
	if st.State != StateSyncing {
		st.State = StateDeleted
	}
	return s.d.Store.UpdateSyncState(ctx, st)
}

func (s *Service) deleteObjects(ctx context.Context, st *State) error {
	listed, err := s.listPrefix(ctx, st.AccountID, st.SandboxID)
	if err != nil {
		return err
	}
	s.forgetNames(st.SandboxID)
	// The marker goes last: a prefix cut short holds it as long as it
	// holds an escaped name.
	marker, hasMarker := listed[NamesMarker]
	delete(listed, NamesMarker)
	for _, o := range listed {
		if err := s.d.Backend.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	if hasMarker {
		if err := s.d.Backend.Delete(ctx, marker.Key); err != nil {
			return err
		}
	}
	if err := s.d.Store.ClearSynced(ctx, st.SandboxID); err != nil {
		return fmt.Errorf("forget stored files: %w", err)
	}
	return nil
}

// sweep deletes the files of destroyed sandboxes past their retention.
func (s *Service) sweep(ctx context.Context) {
	states, err := s.d.Store.SyncStates(ctx, StateFinal)
	if err != nil {
		s.d.Log.ErrorContext(ctx, "list final storage syncs", "err", err)
		return
	}
	now := s.d.Now()
	for _, st := range states {
		if st.RetainUntil.IsZero() || now.Before(st.RetainUntil) {
			continue
		}
		if err := s.deleteObjects(ctx, st); err != nil {
			s.d.Log.WarnContext(ctx, "delete files past retention", "sandbox", st.SandboxID, "err", s.redact(err.Error()))
			continue
		}
		st.State = StateDeleted
		if err := s.d.Store.UpdateSyncState(ctx, st); err != nil {
			s.d.Log.ErrorContext(ctx, "record deleted storage", "sandbox", st.SandboxID, "err", err)
		}
	}
}

// State returns a sandbox's sync state (ErrNoSync when it was never synced).
func (s *Service) State(ctx context.Context, sandboxID string) (*State, error) {
	return s.d.Store.SyncState(ctx, sandboxID)
}

// Stored lists a sandbox's files in the backend, by their paths relative
// to its workspace, in path order.
func (s *Service) Stored(ctx context.Context, sb *model.Sandbox, fn func(path string, o Object) error) error {
	listed, err := s.listPrefix(ctx, sb.AccountID, sb.ID)
	if err != nil {
		return err
	}
	files := storedNames(listed)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if err := fn(p, files[p]); err != nil {
			return err
		}
	}
	return nil
}

// Open opens one stored file of a sandbox (ErrNotFound when none).
func (s *Service) Open(ctx context.Context, sb *model.Sandbox, rel string) (io.ReadCloser, error) {
	if _, ok := StoredPath(rel); !ok {
		return nil, ErrNotFound
	}
	escaped, err := s.namesOf(ctx, sb.AccountID, sb.ID)
	if err != nil {
		return nil, err
	}
	return s.d.Backend.Get(ctx, s.objectKey(sb.AccountID, sb.ID, rel, escaped))
}
