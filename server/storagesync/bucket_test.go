package storagesync

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// goneBackend is a memBackend whose bucket can be deleted outright: every
// call then answers as real S3 does (NoSuchBucket) until it is made again.
type goneBackend struct {
	*memBackend
	create bool // Config.CreateBucket
	mu     sync.Mutex
	gone   bool
}

func (b *goneBackend) missing() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return &noBucketError{bucket: "bk", err: errors.New("NoSuchBucket")}
	}
	return nil
}

func (b *goneBackend) setGone(gone bool) {
	b.mu.Lock()
	b.gone = gone
	b.mu.Unlock()
	if gone {
		b.memBackend.mu.Lock()
		clear(b.objs)
		b.memBackend.mu.Unlock()
	}
}

func (b *goneBackend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := b.missing(); err != nil {
		return err
	}
	return b.memBackend.Put(ctx, key, r, size)
}

func (b *goneBackend) List(ctx context.Context, prefix string, fn func(Object) error) error {
	if err := b.missing(); err != nil {
		return err
	}
	return b.memBackend.List(ctx, prefix, fn)
}

func (b *goneBackend) createsBucket() bool { return b.create }

func (b *goneBackend) ensureBucket(context.Context) (bool, error) {
	if b.missing() == nil {
		return false, nil
	}
	if !b.create {
		return false, errors.New("bucket bk does not exist")
	}
	b.setGone(false)
	return true, nil
}

// keptStore is a memStore that keeps the sandbox's sync state.
type keptStore struct {
	*memStore
	mu sync.Mutex
	st State
}

func (s *keptStore) SyncState(context.Context, string) (*State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	return &st, nil
}

func (s *keptStore) UpdateSyncState(_ context.Context, st *State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = *st
	return nil
}

// TestBucketDeletedRefills: a bucket deleted outright (not emptied) and
// made again is refilled with every file, not only those changed since:
// a flush that meets the bucket missing has each sandbox's index checked
// again at its next flush, as a start of the server does. When the backend
// was opened to create its bucket (Config.CreateBucket, as at start), the
// flush makes it at once and stores everything into it.
func TestBucketDeletedRefills(t *testing.T) {
	for _, create := range []bool{false, true} {
		name := map[bool]string{false: "operator makes it", true: "create bucket"}[create]
		t.Run(name, func(t *testing.T) { testBucketDeletedRefills(t, create) })
	}
}

func testBucketDeletedRefills(t *testing.T, create bool) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	old := now.Add(-time.Minute)
	files := &memFiles{files: map[string]memFile{
		"a.txt": {[]byte("alpha"), old}, "d/ü b.txt": {[]byte("unicode"), old}, "empty": {nil, old},
	}}
	b := &goneBackend{memBackend: &memBackend{objs: map[string][]byte{}}, create: create}
	st := &keptStore{
		memStore: &memStore{synced: map[string]Synced{}, queue: map[string]time.Time{}},
		st:       State{SandboxID: "sb", AccountID: "acct", State: StateSyncing},
	}
	s, err := New(Deps{Backend: b, Store: st, Files: files, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }, Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	sb := &model.Sandbox{ID: "sb", AccountID: "acct"}
	s.Created(t.Context(), sb)
	if _, res, err := s.Flush(t.Context(), sb); err != nil || res.Uploaded != 3 {
		t.Fatalf("first flush: %+v, %v", res, err)
	}
	stored := func(what string) {
		t.Helper()
		b.memBackend.mu.Lock()
		defer b.memBackend.mu.Unlock()
		for p := range files.files {
			if _, ok := b.objs["p/acct/sb/"+p]; !ok {
				t.Errorf("%s: %s is not in the bucket", what, p)
			}
		}
	}

	// The bucket goes; a file changes; the periodic flush meets the bucket missing.
	b.setGone(true)
	files.files["new.txt"] = memFile{[]byte("new"), old}
	state, _ := st.SyncState(t.Context(), "sb")
	if create {
		_, res, err := s.Flush(t.Context(), sb)
		if err != nil || res.Uploaded != 4 {
			t.Errorf("forced flush into a deleted bucket it may create: %+v, %v; want 4 uploaded", res, err)
		}
		stored("after the forced flush made the bucket")
		return
	}
	s.runOne(t.Context(), state)
	state, _ = st.SyncState(t.Context(), "sb")
	if !strings.Contains(state.LastError, "bucket bk does not exist") {
		t.Errorf("last_error = %q, want the missing bucket named", state.LastError)
	}
	// The operator makes it again, empty; the next flush stores everything.
	b.setGone(false)
	now = state.NextAttemptAt
	s.runOne(t.Context(), state)
	stored("after the operator made the bucket again")
	if state, _ = st.SyncState(t.Context(), "sb"); state.LastError != "" {
		t.Errorf("last_error = %q after the refill", state.LastError)
	}
}
