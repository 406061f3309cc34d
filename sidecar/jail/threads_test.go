package jail

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTrimThreads: threads a burst of blocking syscalls left idle are
// ended, and a call with nothing to trim returns at once without
// churning.
func TestTrimThreads(t *testing.T) {
	before, err := CountThreads()
	if err != nil {
		t.Fatal(err)
	}
	// Eight goroutines blocked in syscalls at once: the runtime starts a
	// thread for each, which stays once they return.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ts := unix.NsecToTimespec(50e6)
			_ = unix.Nanosleep(&ts, nil)
		})
	}
	wg.Wait()
	burst, err := CountThreads()
	if err != nil {
		t.Fatal(err)
	}
	if burst < before+4 {
		t.Fatalf("%d threads after the burst, %d before; the burst should have added several", burst, before)
	}
	target := burst - 4
	got, err := TrimThreads(target)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := CountThreads()
	t.Logf("threads: %d before, %d after the burst, %d after TrimThreads(%d)", before, burst, now, target)
	if got > target || now > target {
		t.Errorf("TrimThreads(%d) = %d (now %d), want at most %d", target, got, now, target)
	}
	// Nothing idle below the floor: it returns without ending the rest.
	floor, err := TrimThreads(1)
	if err != nil {
		t.Fatal(err)
	}
	if floor < 3 {
		t.Errorf("TrimThreads(1) = %d: the runtime's own threads cannot go", floor)
	}
}
