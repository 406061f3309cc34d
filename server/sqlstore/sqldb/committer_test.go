package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// entry is what the committer's tests append.
type entry struct{ ID string }

var (
	// errConflict is one entry's own failure.
	errConflict = errors.New("conflict")
	// errReadOnly is a failure of the whole store (storeWide).
	errReadOnly = errors.New("the store is read-only")
)

func storeWide(err error) bool { return errors.Is(err, errReadOnly) }

// fakeCommits records the batches a committer writes; the first batch
// blocks until release is closed, so that appends pile up behind it.
type fakeCommits struct {
	mu      sync.Mutex
	batches [][]string
	release chan struct{}
	failID  string // a batch holding it fails; written alone it fails too
	fault   error  // when set, every batch fails with it
}

func (f *fakeCommits) commit(_ context.Context, batch []*entry) error {
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
			return fmt.Errorf("insert entry: %w", errConflict)
		}
	}
	return nil
}

func (f *fakeCommits) single(ctx context.Context, e *entry) error {
	return f.commit(ctx, []*entry{e})
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
			wantErrs: map[string]error{"e3": errConflict}, wantLen: 2 + 4,
		},
		{
			name: "store-wide fault", fault: errReadOnly,
			wantErrs: map[string]error{
				"e0": errReadOnly, "e1": errReadOnly, "e2": errReadOnly,
				"e3": errReadOnly, "e4": errReadOnly,
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
			c := NewCommitter(f.commit, f.single, storeWide)
			defer c.Close()
			errs := make(map[string]error)
			var mu sync.Mutex
			var wg sync.WaitGroup
			add := func(id string, ctx context.Context) {
				wg.Go(func() {
					err := c.Append(ctx, &entry{ID: id})
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

// TestCommitterClosed: an append to a closed committer fails at once.
func TestCommitterClosed(t *testing.T) {
	f := &fakeCommits{release: make(chan struct{})}
	close(f.release)
	c := NewCommitter(f.commit, f.single, storeWide)
	c.Close()
	c.Close()
	if err := c.Append(t.Context(), &entry{ID: "late"}); !errors.Is(err, ErrClosed) {
		t.Errorf("append after close: %v, want ErrClosed", err)
	}
}

// waitQueued waits until the committer's first batch is being written.
func waitQueued(t *testing.T, _ *Committer[*entry], f *fakeCommits, n int) {
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
