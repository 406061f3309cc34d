//go:build linux

package hostcap

import (
	"context"
	"testing"
	"time"
)

// keepHost is an account of the roomy fake host whose reading is kept
// every keepEvery for keepFor after a create's admission.
func keepHost(t *testing.T, keepEvery, keepFor time.Duration) *Host {
	t.Helper()
	d := newHost(t, Limits{ProcRoot: roomy.write(t)})
	d.keepEvery, d.keepFor = keepEvery, keepFor
	t.Cleanup(d.Stop)
	return d
}

// capacityState is the reading's time and whether keepFresh runs.
func capacityState(d *Host) (at time.Time, keeping, refreshing bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reading.At, d.keeping, d.refreshing
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline (a liveness check, not a timing one).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestCapacityKeptFresh: after a create's admission the reading is taken
// again in the background, with no other caller, until keepFor has
// passed; then nothing reads the host any more.
func TestCapacityKeptFresh(t *testing.T) {
	t.Parallel()
	d := keepHost(t, 5*time.Millisecond, 200*time.Millisecond)
	if err := d.AdmitCreate(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	first, _, _ := capacityState(d)
	// Under load the keeper's first tick can come after its window
	// ends; the window is re-armed then (as a create would), so the wait
	// is for the background reading itself, not for a tick within 200 ms.
	waitFor(t, "a reading taken in the background", func() bool {
		at, keeping, _ := capacityState(d)
		if !at.After(first) && !keeping {
			d.Keep()
		}
		return at.After(first)
	})
	waitFor(t, "the keeping to end after keepFor", func() bool {
		_, keeping, _ := capacityState(d)
		return !keeping
	})
	last, _, _ := capacityState(d)
	time.Sleep(20 * 5 * time.Millisecond)
	if at, _, _ := capacityState(d); !at.Equal(last) {
		t.Errorf("the reading was taken again %v after the keeping ended", at.Sub(last))
	}
}

// TestCapacityKeptServes: while the reading is kept, a create past
// TTL reads the cheap parts and starts no reading beside itself
// (the keeper takes the next); the admission rules stay: past
// MaxAge (a keeper that lags) the create takes a reading itself.
func TestCapacityKeptServes(t *testing.T) {
	t.Parallel()
	d := keepHost(t, time.Hour, time.Hour) // kept, but no tick within the test
	ctx := context.Background()
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	age := func(by time.Duration) time.Time {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.reading.At = d.reading.At.Add(-by)
		return d.reading.At
	}
	aged := age(TTL)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// A reading started beside the create would replace this one.
	waitFor(t, "no reading in the background", func() bool {
		_, _, refreshing := capacityState(d)
		return !refreshing
	})
	if at, keeping, _ := capacityState(d); !at.Equal(aged) || !keeping {
		t.Errorf("after a create past TTL while kept: reading taken %v later, keeping %t; want the same reading, kept", at.Sub(aged), keeping)
	}
	stale := age(MaxAge)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if at, _, _ := capacityState(d); !at.After(stale.Add(MaxAge)) {
		t.Errorf("a create past MaxAge while kept did not take a reading (reading at %v)", at)
	}
}

// TestCapacityKeepingStopsAtStop: Stop (the driver's Shutdown) ends the
// keeping.
func TestCapacityKeepingStopsAtStop(t *testing.T) {
	t.Parallel()
	d := keepHost(t, 5*time.Millisecond, time.Hour)
	if err := d.AdmitCreate(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if _, keeping, _ := capacityState(d); !keeping {
		t.Fatal("no keeping after a create's admission")
	}
	d.Stop()
	waitFor(t, "the keeping to end at Stop", func() bool {
		_, keeping, _ := capacityState(d)
		return !keeping
	})
}
