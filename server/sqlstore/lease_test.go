package sqlstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// testSandboxLease: the lifecycle lease on a sandbox's row, taken through
// two store handles on one database (two servers; one on SQLite, which
// one server holds alone): a lease held is refused to another owner,
// renewed by its holder, taken by another once it ended, released only
// by its holder, left alone by the row's own updates; of owners taking
// a free lease at once exactly one gets it.
func testSandboxLease(t *testing.T, newStore storeFactory) {
	one, two := twoServers(t, newStore)
	ctx := t.Context()
	a := mustAccount(t, one, "a@example.com")
	sb := mustSandbox(t, one, newSandbox(a, base))
	steps := []struct {
		name  string
		st    model.Store
		owner string
		now   int // seconds after base; the lease runs 30 s from it
		want  bool
	}{
		{"a free lease is taken", one, "s1", 0, true},
		{"another owner is refused while it runs", two, "s2", 10, false},
		{"its holder renews it", one, "s1", 20, true},
		{"the renewal holds it past the first lease's end", two, "s2", 40, false},
		{"it is taken once it ended (its holder died)", two, "s2", 51, true},
		{"the first holder is refused now", one, "s1", 52, false},
	}
	for _, s := range steps {
		got, err := s.st.TakeSandboxLease(ctx, sb.ID, s.owner, after(s.now), after(s.now+30))
		if err != nil || got != s.want {
			t.Errorf("%s: TakeSandboxLease(%s at +%ds) = %v, %v; want %v", s.name, s.owner, s.now, got, err, s.want)
		}
	}

	// The row's updates keep the lease.
	if _, err := one.UpdateSandbox(ctx, sb.ID, func(sb *model.Sandbox) error {
		sb.Status = api.StatusPaused
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := one.TakeSandboxLease(ctx, sb.ID, "s1", after(53), after(83)); err != nil || got {
		t.Errorf("after an update of the row, another owner took the lease: %v, %v", got, err)
	}
	// A release by a server that no longer holds it leaves it.
	if err := one.ReleaseSandboxLease(ctx, sb.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	if got, err := one.TakeSandboxLease(ctx, sb.ID, "s1", after(54), after(84)); err != nil || got {
		t.Errorf("a release by another owner freed the lease: %v, %v", got, err)
	}
	// Its holder's release frees it at once.
	if err := two.ReleaseSandboxLease(ctx, sb.ID, "s2"); err != nil {
		t.Fatal(err)
	}
	if got, err := one.TakeSandboxLease(ctx, sb.ID, "s1", after(55), after(85)); err != nil || !got {
		t.Errorf("after its holder released it: %v, %v; want taken", got, err)
	}
	if _, err := one.TakeSandboxLease(ctx, "no-such-sandbox", "s1", after(55), after(85)); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("the lease of a missing row: %v, want ErrNotFound", err)
	}

	// A race for a free lease: one winner.
	free := mustSandbox(t, one, newSandbox(a, base))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []string
	)
	for i := range 8 {
		st := []model.Store{one, two}[i%2]
		owner := fmt.Sprintf("r%d", i)
		wg.Go(func() {
			got, err := st.TakeSandboxLease(ctx, free.ID, owner, base, after(30))
			if err != nil {
				t.Error(err)
			}
			if got {
				mu.Lock()
				wins = append(wins, owner)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Errorf("owners that took one free lease at once: %v, want one", wins)
	}
}
