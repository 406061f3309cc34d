package storagesync

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/boxkite/boxkite/client/api"
)

// Result sums up one flush.
type Result struct {
	Uploaded int   // files stored
	Bytes    int64 // their bytes
	Deleted  int   // objects removed for files gone from the workspace
	Deferred int   // files still changing, left for the next flush
	Skipped  int   // links and other non-files, never synced
	Complete bool  // everything found was stored (nothing deferred or failed)
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
// changed files stable for StableFor (any, when final) are uploaded,
// objects of files gone are deleted. It holds the sandbox's flush lock.
func (s *Service) flush(ctx context.Context, st *State, final bool) (Result, error) {
	var res Result
	started := s.d.Now()
	tree, err := s.d.Files.Tree(ctx, st.SandboxID, Root, s.d.Ignore)
	if err != nil {
		return res, fmt.Errorf("list the workspace: %w", err)
	}
	known, err := s.d.Store.SyncedFiles(ctx, st.SandboxID)
	if err != nil {
		return res, fmt.Errorf("load the stored files: %w", err)
	}
	seen := make(map[string]bool, len(tree.Entries))
	var todo []api.TreeEntry
	for _, e := range tree.Entries {
		if e.Kind != "file" {
			res.Skipped++ // links are never followed, and not stored
			continue
		}
		seen[e.Path] = true
		if k, ok := known[e.Path]; ok && k.Size == e.Size && k.MtimeNS == e.ModifiedNS {
			continue
		}
		if settled := time.Unix(0, e.ModifiedNS).Add(s.d.StableFor); !final && started.Before(settled) {
			res.Deferred++
			if res.Settled.IsZero() || settled.Before(res.Settled) {
				res.Settled = settled
			}
			continue
		}
		todo = append(todo, e)
	}
	for len(todo) > 0 {
		n, size := 0, int64(0)
		for n < len(todo) && n < bundleFiles && (n == 0 || size+todo[n].Size <= bundleBytes) {
			size += todo[n].Size
			n++
		}
		if err := s.upload(ctx, st, todo[:n], &res); err != nil {
			return res, err
		}
		todo = todo[n:]
	}
	if !tree.Truncated {
		for p := range known {
			if seen[p] {
				continue
			}
			if err := s.d.Backend.Delete(ctx, s.key(st.AccountID, st.SandboxID, p)); err != nil {
				return res, err
			}
			if err := s.d.Store.DeleteSynced(ctx, st.SandboxID, p); err != nil {
				return res, fmt.Errorf("forget a stored file: %w", err)
			}
			res.Deleted++
		}
	}
	res.Complete = res.Deferred == 0 && !tree.Truncated
	if res.Complete {
		if err := s.d.Store.DequeueSync(ctx, st.SandboxID, started); err != nil {
			return res, fmt.Errorf("dequeue flushed writes: %w", err)
		}
	}
	return res, nil
}

// upload stores the files of one bundle read from the sidecar. Small
// files are read into memory and put concurrently (putConcurrency at a
// time); a large one streams from the sidecar to the store.
func (s *Service) upload(ctx context.Context, st *State, files []api.TreeEntry, res *Result) error {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	rc, err := s.d.Files.Bundle(ctx, st.SandboxID, Root, paths)
	if err != nil {
		return fmt.Errorf("read the workspace: %w", err)
	}
	defer rc.Close()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(putConcurrency)
	var (
		mu   sync.Mutex
		done []Synced // stored, recorded together (one transaction) at the end
	)
	put := func(name string, r io.Reader, size int64, mtime time.Time) error {
		if err := s.d.Backend.Put(gctx, s.key(st.AccountID, st.SandboxID, name), r, size); err != nil {
			return err
		}
		mu.Lock()
		done = append(done, Synced{Path: name, Size: size, MtimeNS: mtime.UnixNano(), SyncedAt: s.d.Now()})
		res.Uploaded++
		res.Bytes += size
		mu.Unlock()
		return nil
	}
	// What was stored is recorded even when a later file failed; a file
	// stored but not recorded (a crash) is only stored again.
	defer func() {
		if err := s.d.Store.PutSynced(context.WithoutCancel(ctx), st.SandboxID, done); err != nil {
			s.d.Log.ErrorContext(ctx, "record stored files", "sandbox", st.SandboxID, "err", err)
		}
	}()
	tr := tar.NewReader(rc)
	for gctx.Err() == nil {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			g.Go(func() error { return fmt.Errorf("read the workspace: %w", err) })
			break
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		lr := &limitedReader{ctx: gctx, r: tr, l: s.limit}
		if hdr.Size > smallFile {
			r := &countingReader{r: lr}
			err := put(hdr.Name, r, hdr.Size, hdr.ModTime)
			if err == nil && r.n != hdr.Size {
				err = fmt.Errorf("read the workspace: %s: %d of %d bytes", hdr.Name, r.n, hdr.Size)
			}
			if err != nil {
				g.Go(func() error { return err })
				break
			}
			continue
		}
		data, err := io.ReadAll(lr)
		if err == nil && int64(len(data)) != hdr.Size {
			err = fmt.Errorf("read the workspace: %s: %d of %d bytes", hdr.Name, len(data), hdr.Size)
		}
		if err != nil {
			g.Go(func() error { return err })
			break
		}
		name, mtime := hdr.Name, hdr.ModTime
		g.Go(func() error { return put(name, bytes.NewReader(data), int64(len(data)), mtime) })
	}
	return g.Wait()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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
