package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// TestUsageBurstSharesConnections: a burst of creates reads its usage all
// at once (sandbox.startPlain), and the reads take turns on the pool's
// connections instead of each opening one (the file, the pragmas and the
// schema parsed again) to close it after.
func TestUsageBurstSharesConnections(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "usage.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := &model.Account{ID: model.NewID(), Email: "burst@example.com", CreatedAt: time.Now()}
	if err := s.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	before := connsOpened(s)
	start := make(chan struct{})
	errs := make(chan error, 100)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			<-start
			now := time.Now()
			for range 5 {
				if _, err := s.Usage(ctx, a.ID, now.Add(-time.Hour), now); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := connsOpened(s) - before; n > usageReaders {
		t.Errorf("500 usage reads from 100 goroutines opened %d connections; want at most %d", n, usageReaders)
	}
}

// TestUsageWaitEndsWithContext: a usage read waiting for its turn gives up
// when its context ends.
func TestUsageWaitEndsWithContext(t *testing.T) {
	s, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "usage.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range cap(s.usageTurns) {
		s.usageTurns <- struct{}{} // every turn taken
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	now := time.Now()
	if _, err := s.Usage(ctx, model.NewID(), now.Add(-time.Hour), now); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("usage read with every turn taken: %v; want %v", err, context.DeadlineExceeded)
	}
	<-s.usageTurns
	if _, err := s.Usage(t.Context(), model.NewID(), now.Add(-time.Hour), now); err != nil {
		t.Fatalf("usage read with a turn free: %v", err)
	}
}

// connsOpened is how many connections s's pool has opened so far.
func connsOpened(s *Store) int {
	st := s.db.Stats()
	return st.OpenConnections + int(st.MaxIdleClosed+st.MaxIdleTimeClosed+st.MaxLifetimeClosed)
}
