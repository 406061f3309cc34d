package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// waitSlotQueue waits until n writers wait for the slot. Its bound is not a
// timing assertion: a writer that never queues fails the test.
func waitSlotQueue(t *testing.T, w *WriteSlot, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); w.Waiting() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d writers wait for the slot; want %d", w.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// holdSlot runs a write that holds w until the returned function is
// called, which waits for that write's commit.
func holdSlot(t *testing.T, w *WriteSlot) (release func()) {
	t.Helper()
	holding, released := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- w.TxOn(t.Context(), t.Context(), func(*sql.Tx) error {
			close(holding)
			<-released
			return nil
		})
	}()
	<-holding
	return func() {
		close(released)
		if err := <-done; err != nil {
			t.Errorf("the write that held the slot: %v", err)
		}
	}
}

// TestWriteSlotOrder: waiters run in the order they asked for the slot,
// together in one transaction once it comes free; one whose context ends
// leaves the queue without running.
func TestWriteSlotOrder(t *testing.T) {
	db, _ := openTestDB(t)
	w := NewWriteSlot(db, func(error) bool { return false })
	release := holdSlot(t, w)
	var (
		order []int // appended by the batch's leader, one write at a time
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	for i := range 8 {
		if i == 3 {
			go func() {
				gaveUp <- w.TxOn(ctx, ctx, func(*sql.Tx) error { order = append(order, i); return nil })
			}()
		} else {
			wg.Go(func() {
				if err := w.TxOn(t.Context(), t.Context(), func(*sql.Tx) error { order = append(order, i); return nil }); err != nil {
					t.Errorf("waiter %d: %v", i, err)
				}
			})
		}
		waitSlotQueue(t, w, i+1)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled waiter got %v; want context.Canceled", err)
	}
	waitSlotQueue(t, w, 7)
	release()
	wg.Wait()
	if diff := cmp.Diff([]int{0, 1, 2, 4, 5, 6, 7}, order); diff != "" {
		t.Errorf("order of the waiters (-want +got):\n%s", diff)
	}
	if b, n := w.Stats(); b != 1 || n != 7 {
		t.Errorf("Stats: %d batches of %d writes; want the 7 waiters in 1", b, n)
	}
	// Free again: a caller whose context has ended is refused, not queued.
	if err := w.TxOn(ctx, ctx, func(*sql.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a write with a cancelled context: %v; want context.Canceled", err)
	}
	if err := w.TxOn(t.Context(), t.Context(), func(*sql.Tx) error { return nil }); err != nil {
		t.Errorf("a write on the free slot: %v", err)
	}
}
