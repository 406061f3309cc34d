package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

// waitSlotQueue waits until n writers wait for the slot. Its bound is not a
// timing assertion: a writer that never queues fails the test.
func waitSlotQueue(t *testing.T, w *sqldb.WriteSlot, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); w.Waiting() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d writers wait for the slot; want %d", w.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// holdSlot runs a write that holds s's write slot until the returned
// function is called, which waits for that write's commit.
func holdSlot(t *testing.T, s *Store) (release func()) {
	t.Helper()
	holding, released := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.tx(t.Context(), func(*sql.Tx) error {
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

func openSlotStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "slot.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSlowWriterQueuesWriters: while a write transaction is held open
// for longer than SQLite's busy timeout, writers of every kind (a
// transaction, a lone statement, an audit append) queue behind it instead
// of failing with SQLITE_BUSY, then commit in the order they came; one
// whose context ends meanwhile gives up with its context's error and
// writes nothing. SQLite's busy timeout is cut to 20 ms for the test, so
// a writer that went past the slot would fail.
func TestSlowWriterQueuesWriters(t *testing.T) {
	ctx := t.Context()
	s, err := open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "slot.db"), 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	holding, release := make(chan struct{}), make(chan struct{})
	slow := make(chan error, 1)
	go func() {
		slow <- s.inTx(ctx, func(tx *sql.Tx) error {
			if err := s.createAccount(ctx, tx, &model.Account{ID: model.NewID(), Email: "slow@example.com", CreatedAt: time.Now()}); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding

	var wg sync.WaitGroup
	errs := make([]error, 10)
	cancelCtx, cancel := context.WithCancel(ctx)
	for i := range errs {
		a := &model.Account{ID: model.NewID(), Email: fmt.Sprintf("w%d@example.com", i), CreatedAt: time.Now()}
		wg.Go(func() {
			switch {
			case i == 4: // gives up while queued
				errs[i] = s.CreateAccount(cancelCtx, a)
			case i == 7:
				errs[i] = s.AppendExecLog(ctx, &model.ExecLogEntry{
					ID: model.NewID(), SandboxID: "sb", AccountID: a.ID, Source: api.LogSourceAgent,
					Operation: "exec", StartedAt: time.Now(),
				})
			case i%2 == 0: // a lone INSERT
				errs[i] = s.CreateAccount(ctx, a)
			default: // a transaction
				_, _, errs[i] = s.EnsureAccountKey(ctx, a, &model.APIKey{ID: model.NewID(), Hash: a.ID, Prefix: "bxk_live_x", Role: model.RoleAdmin, CreatedAt: time.Now()})
			}
		})
		waitSlotQueue(t, s.slot, i+1)
	}
	time.Sleep(100 * time.Millisecond) // five busy timeouts
	cancel()
	waitSlotQueue(t, s.slot, len(errs)-1)
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("the slow writer: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if i == 4 {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the writer that gave up got %v; want context.Canceled", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	got := accountEmails(t, s)
	want := []string{
		"slow@example.com", "w0@example.com", "w1@example.com", "w2@example.com", "w3@example.com",
		"w5@example.com", "w6@example.com", "w8@example.com", "w9@example.com",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accounts in commit order (-want +got):\n%s", diff)
	}
	if _, n := s.GroupCommitStats(); n != 1 {
		t.Errorf("audit entries committed: %d; want 1", n)
	}
}
