package storagesync

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/iocount"
)

// Result sums up one flush.
type Result struct {
	Uploaded int   // files stored
	Bytes    int64 // their bytes
	Deleted  int   // objects removed for files gone from the workspace
	Deferred int   // files still changing, left for the next flush
	Skipped  int   // links and other non-files, never synced
	Complete bool  // everything found was stored (nothing deferred or failed)
	// Unchanged says the sidecar's journal answered that nothing changed:
	// no walk, nothing compared.
	Unchanged bool
	// Settled is when the first deferred file will have been unchanged
	// for StableFor (zero when none was deferred).
	Settled time.Time
}

// detailPath is the "path" of an audit entry's detail.
func detailPath(detail json.RawMessage) string {
	var d struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(detail, &d)
	return d.Path
}

// flush reconciles the sandbox's workspace with its stored files: new and
// changed files are uploaded once stable for the stability wait (at once
// when the API wrote them or when final), objects of files gone are
// deleted. It holds the sandbox's flush lock.
func (s *Service) flush(ctx context.Context, st *State, final bool) (Result, error) {
	var res Result
	started := s.d.Now()
	q, deferred := s.treeQuery(st.SandboxID, final, started)
	tree, err := s.d.Files.Tree(ctx, st.SandboxID, q)
	if err != nil {
		return res, fmt.Errorf("list the workspace: %w", err)
	}
	partial := q.Since != "" && tree.Partial && validScopes(tree.Changed)
	if partial && len(tree.Changed) == 0 && len(deferred) == 0 && st.Pending == 0 {
		res.Complete, res.Unchanged = true, true
		s.noteTree(st.SandboxID, q, tree, true, false, nil, started)
		return res, nil
	}
	entries := tree.Entries
	if partial {
		// Only the changed subtrees were read; files left changing last
		// time and not changed since are as they were then.
		entries = slices.DeleteFunc(slices.Clone(entries), func(e api.TreeEntry) bool { return !underAny(e.Path, tree.Changed) })
		for _, e := range deferred {
			if !underAny(e.Path, tree.Changed) {
				entries = append(entries, e)
			}
		}
	}
	// Before anything is written: the prefix holds escaped names (names.go).
	if err := s.ensureNames(ctx, st); err != nil {
		return res, err
	}
	plan, err := s.planFlush(ctx, st.SandboxID, entries, final, started, &res)
	if err != nil {
		return res, err
	}
	known, seen, changing, todo := plan.known, plan.seen, plan.changing, plan.todo
	up := s.newUploader(ctx, st, &res)
	// Deletes go first, and are done before any put: a file replaced by
	// a directory of the same name ("a" gone, "a/b" new) is stored as
	// "a/b", which a store that keeps its objects as files on disk
	// (fake-gcs-server) refuses while "a" is there; puts first failed
	// that flush and every retry.
	if !tree.Truncated {
		for p := range known {
			if !seen[p] && (!partial || underAny(p, tree.Changed)) {
				up.remove(p)
			}
		}
		up.wg.Wait()
	}
	// Large files stream each in its own bundle beside the small ones, so
	// a 50 MiB file does not hold back a thousand small ones.
	var small []api.TreeEntry
	for _, e := range todo {
		if e.Size > smallFile {
			up.large(e)
		} else {
			small = append(small, e)
		}
	}
	for len(small) > 0 && up.ctx.Err() == nil {
		n := min(len(small), bundleFiles)
		up.bundle(small[:n])
		small = small[n:]
	}
	if err := up.wait(); err != nil {
		return res, err
	}
	changed := res.Uploaded > 0 || res.Deleted > 0 || res.Deferred > 0 || (partial && len(tree.Changed) > 0)
	s.noteTree(st.SandboxID, q, tree, partial, changed, changing, started)
	res.Complete = res.Deferred == 0 && !tree.Truncated
	// Every queued write is stored now (they are never deferred); files
	// still changing are the reconcile's.
	if !tree.Truncated {
		if err := s.d.Store.DequeueSync(ctx, st.SandboxID, started); err != nil {
			return res, fmt.Errorf("dequeue flushed writes: %w", err)
		}
	}
	return res, nil
}

// flushPlan is what a flush found in the workspace: the files stored
// before, the paths seen now, the files still changing (deferred) and
// those to upload.
type flushPlan struct {
	known    map[string]Synced
	seen     map[string]bool
	changing map[string]api.TreeEntry
	todo     []api.TreeEntry
}

// planFlush sorts the workspace's entries against what is stored: links
// are skipped, unchanged files left, files a command is still writing
// deferred (unless final or written through the API), the rest to upload.
func (s *Service) planFlush(ctx context.Context, sandboxID string, entries []api.TreeEntry, final bool, started time.Time, res *Result) (flushPlan, error) {
	var p flushPlan
	var err error
	p.known, err = s.d.Store.SyncedFiles(ctx, sandboxID)
	if err != nil {
		return flushPlan{}, fmt.Errorf("load the stored files: %w", err)
	}
	queued, err := s.d.Store.QueuedSync(ctx, sandboxID)
	if err != nil {
		return flushPlan{}, fmt.Errorf("load the queued writes: %w", err)
	}
	written := make(map[string]bool, len(queued))
	for _, q := range queued {
		written[q] = true
	}
	p.seen = make(map[string]bool, len(entries))
	p.changing = map[string]api.TreeEntry{}
	for _, e := range entries {
		if _, ok := StoredPath(e.Path); e.Kind != "file" || !ok {
			res.Skipped++ // links are never followed, and not stored
			continue
		}
		p.seen[e.Path] = true
		if k, ok := p.known[e.Path]; ok && k.Size == e.Size && k.MtimeNS == e.ModifiedNS {
			continue
		}
		// A write the API acknowledged is whole; a file a command writes
		// is uploaded once it has stopped changing.
		settled := time.Unix(0, e.ModifiedNS).Add(s.stable)
		if !final && !written[e.Path] && started.Before(settled) {
			res.Deferred++
			p.changing[e.Path] = e
			if res.Settled.IsZero() || settled.Before(res.Settled) {
				res.Settled = settled
			}
			continue
		}
		p.todo = append(p.todo, e)
	}
	return p, nil
}

// uploader runs one flush's puts and deletes, putConcurrency at a time
// and largeConcurrency large files beside them, and records what was
// stored in batches. The first error cancels the rest.
type uploader struct {
	s      *Service
	st     *State
	res    *Result
	ctx    context.Context
	cancel context.CancelFunc
	slots  chan struct{} // puts and deletes under way
	big    chan struct{} // large files under way
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error    // the first failure
	done   []Synced // stored, not yet recorded
}

func (s *Service) newUploader(ctx context.Context, st *State, res *Result) *uploader {
	ctx, cancel := context.WithCancel(ctx)
	return &uploader{
		s: s, st: st, res: res, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, putConcurrency), big: make(chan struct{}, largeConcurrency),
	}
}

// fail stops the flush with err, the first one only.
func (u *uploader) fail(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err = err
		u.cancel()
	}
}

// spawn runs fn once one of slots is free (not at all once the flush
// failed).
func (u *uploader) spawn(slots chan struct{}, fn func() error) {
	select {
	case slots <- struct{}{}:
	case <-u.ctx.Done():
		return
	}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer func() { <-slots }()
		if err := fn(); err != nil {
			u.fail(err)
		}
	}()
}

// put stores one file and notes it for the index.
func (u *uploader) put(name string, r io.Reader, size int64, mtime time.Time) error {
	if err := u.s.d.Backend.Put(u.ctx, u.s.objectKey(u.st.AccountID, u.st.SandboxID, name, true), r, size); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done = append(u.done, Synced{Path: name, Size: size, MtimeNS: mtime.UnixNano(), SyncedAt: u.s.d.Now()})
	u.res.Uploaded++
	u.res.Bytes += size
	if len(u.done) >= recordBatch {
		u.recordLocked()
	}
	return nil
}

// recordLocked writes the stored files to the index, in one transaction.
// What was stored is recorded even when a later file failed; a file
// stored but not recorded (a crash) is only stored again.
func (u *uploader) recordLocked() {
	if err := u.s.d.Store.PutSynced(context.WithoutCancel(u.ctx), u.st.SandboxID, u.done); err != nil {
		u.s.d.Log.ErrorContext(u.ctx, "record stored files", "sandbox", u.st.SandboxID, "err", err)
	}
	u.done = u.done[:0]
}

// remove deletes the object of a file gone from the workspace.
func (u *uploader) remove(p string) {
	u.spawn(u.slots, func() error {
		if err := u.s.d.Backend.Delete(u.ctx, u.s.objectKey(u.st.AccountID, u.st.SandboxID, p, true)); err != nil {
			return err
		}
		if err := u.s.d.Store.DeleteSynced(u.ctx, u.st.SandboxID, p); err != nil {
			return fmt.Errorf("forget a stored file: %w", err)
		}
		u.mu.Lock()
		u.res.Deleted++
		u.mu.Unlock()
		return nil
	})
}

// large streams one large file in a bundle of its own.
func (u *uploader) large(e api.TreeEntry) {
	u.spawn(u.big, func() error {
		u.bundle([]api.TreeEntry{e})
		return nil
	})
}

// wait waits for the puts and deletes under way, records the rest and
// returns the first failure.
func (u *uploader) wait() error {
	u.wg.Wait()
	u.cancel()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.recordLocked()
	return u.err
}

// bundle reads the files of one bundle from the sidecar. Small files are
// read into memory and put concurrently; a large one streams from the
// sidecar to the store.
func (u *uploader) bundle(files []api.TreeEntry) {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	rc, err := u.s.d.Files.Bundle(u.ctx, u.st.SandboxID, Root, paths)
	if err != nil {
		u.fail(fmt.Errorf("read the workspace: %w", err))
		return
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for u.ctx.Err() == nil {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			u.fail(fmt.Errorf("read the workspace: %w", err))
			return
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		lr := &limitedReader{ctx: u.ctx, r: tr, l: u.s.limit}
		if hdr.Size > smallFile {
			r := &iocount.Reader{R: lr}
			err := u.put(hdr.Name, r, hdr.Size, hdr.ModTime)
			if err == nil && r.N != hdr.Size {
				err = fmt.Errorf("read the workspace: %s: %d of %d bytes", hdr.Name, r.N, hdr.Size)
			}
			if err != nil {
				u.fail(err)
				return
			}
			continue
		}
		data, err := io.ReadAll(lr)
		if err == nil && int64(len(data)) != hdr.Size {
			err = fmt.Errorf("read the workspace: %s: %d of %d bytes", hdr.Name, len(data), hdr.Size)
		}
		if err != nil {
			u.fail(err)
			return
		}
		name, mtime := hdr.Name, hdr.ModTime
		u.spawn(u.slots, func() error { return u.put(name, bytes.NewReader(data), int64(len(data)), mtime) })
	}
}

// limitedReader reads at most the bandwidth the limiter grants.
type limitedReader struct {
	ctx context.Context
	r   io.Reader
	l   interface {
		WaitN(context.Context, int) error
		Burst() int
	}
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if b := l.l.Burst(); len(p) > b {
		p = p[:b]
	}
	n, err := l.r.Read(p)
	if n > 0 {
		if werr := l.l.WaitN(l.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// record writes a flush's outcome to the sandbox's state: the time of a
// success, or the error and the backoff before the next attempt.
func (s *Service) record(ctx context.Context, st *State, err error) {
	now := s.d.Now()
	if err == nil {
		st.LastFlushAt, st.LastError, st.LastErrorAt, st.Attempts, st.NextAttemptAt = now, "", time.Time{}, 0, now
	} else {
		st.Attempts++
		st.LastError, st.LastErrorAt = s.redact(err.Error()), now
		st.NextAttemptAt = now.Add(backoff(st.Attempts))
		s.d.Log.WarnContext(ctx, "storage sync failed; retrying with backoff", "sandbox", st.SandboxID,
			"attempts", st.Attempts, "next", st.NextAttemptAt, "err", st.LastError)
	}
	if uerr := s.d.Store.UpdateSyncState(context.WithoutCancel(ctx), st); uerr != nil {
		s.d.Log.ErrorContext(ctx, "record storage sync state", "sandbox", st.SandboxID, "err", uerr)
	}
}

// backoff is the wait after the n-th failed flush in a row: 1 s doubling,
// at most MaxBackoff.
func backoff(n int) time.Duration {
	d := backoffBase
	for i := 1; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}
