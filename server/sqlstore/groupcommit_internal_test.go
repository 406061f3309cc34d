package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
)

// fakeCommits records the batches a committer writes; the first batch
// blocks until release is closed, so that appends pile up behind it.
type fakeCommits struct {
	mu      sync.Mutex
	batches [][]string
	release chan struct{}
	failID  string // a batch holding it fails; written alone it fails too
	fault   error  // when set, every batch fails with it
}

func (f *fakeCommits) commit(_ context.Context, batch []*model.ExecLogEntry) error {
	f.mu.Lock()
	first := len(f.batches) == 0
	var ids []string
	for _, e := range batch {
		ids = append(ids, e.ID)
	}
	f.batches = append(f.batches, ids)
	f.mu.Unlock()
	if first {
		<-f.release
	}
	if f.fault != nil {
		return f.fault
	}
	for _, e := range batch {
		if e.ID == f.failID {
			return fmt.Errorf("insert exec log entry: %w", model.ErrConflict)
		}
	}
	return nil
}

func (f *fakeCommits) single(ctx context.Context, e *model.ExecLogEntry) error {
	return f.commit(ctx, []*model.ExecLogEntry{e})
}

// TestCommitterBatches: appends that arrive while a commit runs are
// written together, in arrival order, and each caller gets its own
// entry's outcome: a batch that fails for one entry is written again
// entry by entry, a store-wide fault answers the whole batch, a caller
// that gave up before its batch is not written, and a closed store
// refuses appends.
func TestCommitterBatches(t *testing.T) {
	tests := []struct {
		name      string
		failID    string
		fault     error
		cancelled string // this entry's caller gives up before its batch
		wantErrs  map[string]error
		wantLen   int // batches written
	}{
		{name: "all commit", wantErrs: map[string]error{}, wantLen: 2},
		{
			name: "one entry fails", failID: "e3",
			wantErrs: map[string]error{"e3": model.ErrConflict}, wantLen: 2 + 4,
		},
		{
			name: "store-wide fault", fault: model.ErrStoreReadOnly,
			wantErrs: map[string]error{
				"e0": model.ErrStoreReadOnly, "e1": model.ErrStoreReadOnly, "e2": model.ErrStoreReadOnly,
				"e3": model.ErrStoreReadOnly, "e4": model.ErrStoreReadOnly,
			},
			wantLen: 2,
		},
		{
			name: "caller gave up", cancelled: "e2",
			wantErrs: map[string]error{"e2": context.Canceled}, wantLen: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCommits{release: make(chan struct{}), failID: tt.failID, fault: tt.fault}
			c := newCommitter(f.commit, f.single)
			defer c.close()
			errs := make(map[string]error)
			var mu sync.Mutex
			var wg sync.WaitGroup
			add := func(id string, ctx context.Context) {
				wg.Go(func() {
					err := c.append(ctx, &model.ExecLogEntry{ID: id})
					mu.Lock()
					errs[id] = err
					mu.Unlock()
				})
			}
			add("e0", t.Context())
			waitQueued(t, c, f, 1)
			// Four more arrive, one at a time, while e0's commit runs.
			queued := 0
			for i := 1; i < 5; i++ {
				id := fmt.Sprintf("e%d", i)
				ctx := t.Context()
				if id == tt.cancelled {
					cctx, cancel := context.WithCancel(ctx)
					cancel()
					ctx = cctx
				}
				add(id, ctx)
				// A cancelled context may lose the race to enter the queue;
				// either way its entry is not written.
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
					mu.Lock()
					_, answered := errs[id]
					mu.Unlock()
					if len(c.reqs) == queued+1 {
						queued++
						break
					}
					if answered {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("append %s neither queued nor answered", id)
					}
				}
			}
			close(f.release)
			wg.Wait()
			for id, err := range errs {
				if want := tt.wantErrs[id]; !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Errorf("append %s: %v, want %v", id, err, want)
				}
			}
			if len(errs) != 5 {
				t.Errorf("%d appends answered, want 5", len(errs))
			}
			if len(f.batches) != tt.wantLen {
				t.Errorf("%d batches %v, want %d", len(f.batches), f.batches, tt.wantLen)
			}
			want := []string{"e1", "e2", "e3", "e4"}
			if tt.cancelled != "" {
				want = []string{"e1", "e3", "e4"}
			}
			if diff := cmp.Diff([][]string{{"e0"}, want}, f.batches[:2]); diff != "" {
				t.Errorf("first two batches (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommitterClosed: an append to a closed store fails at once.
func TestCommitterClosed(t *testing.T) {
	f := &fakeCommits{release: make(chan struct{})}
	close(f.release)
	c := newCommitter(f.commit, f.single)
	c.close()
	c.close()
	if err := c.append(t.Context(), &model.ExecLogEntry{ID: "late"}); !errors.Is(err, errStoreClosed) {
		t.Errorf("append after close: %v, want errStoreClosed", err)
	}
}

// waitQueued waits until the committer's first batch is being written.
func waitQueued(t *testing.T, _ *committer, f *fakeCommits, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f.mu.Lock()
		got := len(f.batches)
		f.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("the committer did not start batch %d", n)
}

// TestAppendStartsNoWatchers: on SQLite an append's transaction runs on
// a context that cannot end, so the driver starts no goroutine to
// interrupt its BEGIN and COMMIT; what is left are database/sql's own,
// one for the transaction and one for the head's read.
func TestAppendStartsNoWatchers(t *testing.T) {
	s := openSQLiteStore(t)
	const n = 20
	created := func() uint64 {
		m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(m)
		return m[0].Value.Uint64()
	}
	s.AppendExecLog(t.Context(), &model.ExecLogEntry{ID: model.NewID(), SandboxID: "sb", AccountID: "a", Source: "agent", Operation: "exec", Detail: []byte(`{}`)})
	before := created()
	for range n {
		e := &model.ExecLogEntry{ID: model.NewID(), SandboxID: "sb", AccountID: "a", Source: "agent", Operation: "exec", Detail: []byte(`{}`)}
		if err := s.AppendExecLog(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	// An unrelated goroutine (a timer's) may start meanwhile: the mean
	// stays below 3 for one or two of them, and is 4 with the watchers.
	if per := float64(created()-before) / n; per >= 3 {
		t.Errorf("an append starts %.2f goroutines, want 2 (database/sql's)", per)
	}
}

// TestAppendOutOfTime: a batch whose BEGIN waits past the batch's
// deadline for another process's lock fails as out of time, which
// answers every entry of it alike (isStoreWide), not as one entry's
// error that has each written again alone.
func TestAppendOutOfTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxkite.db")
	s, err := open(t.Context(), "sqlite:"+path, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Another process's writer, as far as the store can tell.
	dsn, err := sqliteDSN(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.BeginTx(t.Context(), nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	e := &model.ExecLogEntry{ID: model.NewID(), SandboxID: "sb", AccountID: "a", Source: "agent", Operation: "exec", Detail: []byte(`{}`)}
	err = s.appendBatch(ctx, []*model.ExecLogEntry{e})
	if !isStoreWide(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("appendBatch with the lock held past its deadline: %v, want it out of time (store-wide)", err)
	}
}
