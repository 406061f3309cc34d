//go:build linux

package local

import (
	"context"
	"testing"
	"time"
)

// keepDriver is a driver on the roomy fake host whose reading is kept
// every keepEvery for keepFor after a create's admission.
func keepDriver(t *testing.T, keepEvery, keepFor time.Duration) *Driver {
	t.Helper()
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Host: HostLimits{ProcRoot: roomy.write(t)}})
	if err != nil {
		t.Fatal(err)
	}
	d.capacity.keepEvery, d.capacity.keepFor = keepEvery, keepFor
	t.Cleanup(d.stopKeeping)
	return d
}

// capacityState is the reading's time and whether keepFresh runs.
func capacityState(d *Driver) (at time.Time, keeping, refreshing bool) {
	d.capacity.mu.Lock()
	defer d.capacity.mu.Unlock()
	return d.capacity.reading.at, d.capacity.keeping, d.capacity.refreshing
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
	d := keepDriver(t, 5*time.Millisecond, 200*time.Millisecond)
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
			d.keepReading()
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
// capacityTTL reads the cheap parts and starts no reading beside itself
// (the keeper takes the next); the admission rules stay: past
// capacityMaxAge (a keeper that lags) the create takes a reading itself.
func TestCapacityKeptServes(t *testing.T) {
	t.Parallel()
	d := keepDriver(t, time.Hour, time.Hour) // kept, but no tick within the test
	ctx := context.Background()
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	age := func(by time.Duration) time.Time {
		d.capacity.mu.Lock()
		defer d.capacity.mu.Unlock()
		d.capacity.reading.at = d.capacity.reading.at.Add(-by)
		return d.capacity.reading.at
	}
	aged := age(capacityTTL)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// A reading started beside the create would replace this one.
	waitFor(t, "no reading in the background", func() bool {
		_, _, refreshing := capacityState(d)
		return !refreshing
	})
	if at, keeping, _ := capacityState(d); !at.Equal(aged) || !keeping {
		t.Errorf("after a create past capacityTTL while kept: reading taken %v later, keeping %t; want the same reading, kept", at.Sub(aged), keeping)
	}
	stale := age(capacityMaxAge)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if at, _, _ := capacityState(d); !at.After(stale.Add(capacityMaxAge)) {
		t.Errorf("a create past capacityMaxAge while kept did not take a reading (reading at %v)", at)
	}
}

// TestCapacityKeepingStopsAtShutdown: Shutdown ends the keeping.
func TestCapacityKeepingStopsAtShutdown(t *testing.T) {
	t.Parallel()
	d := keepDriver(t, 5*time.Millisecond, time.Hour)
	if err := d.AdmitCreate(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if _, keeping, _ := capacityState(d); !keeping {
		t.Fatal("no keeping after a create's admission")
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the keeping to end at Shutdown", func() bool {
		_, keeping, _ := capacityState(d)
		return !keeping
	})
}
