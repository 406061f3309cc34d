//go:build linux

package loopdisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConcurrentAttaches mounts many new disks at once, as creates at
// once and the prepared pool's refills do: every one of them must get a
// loop device, however often another attach configured the device
// LOOP_CTL_GET_FREE named first (with sixteen immediate tries, 9 to 22
// of 48 failed on a two-core host).
func TestConcurrentAttaches(t *testing.T) {
	requireLoop(t)
	const n = 48
	dir := t.TempDir()
	im := NewImages(filepath.Join(dir, "images"), nil)
	img := func(i int) string { return filepath.Join(dir, fmt.Sprintf("disk%d.img", i)) }
	mnt := func(i int) string { return filepath.Join(dir, fmt.Sprintf("disk%d", i)) }
	for i := range n {
		if err := im.Create(img(i), 16<<20); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = MountNew(img(i), mnt(i))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("disk %d: %v", i, err)
			continue
		}
		if err := Unmount(mnt(i)); err != nil {
			t.Error(err)
		}
	}
}

// TestClaimLoop: claimLoop retries a device another attach took first
// (EBUSY) for as long as wait allows, and no other error.
func TestClaimLoop(t *testing.T) {
	dev, err := os.Open(os.DevNull) // stands for the configured device
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	other := errors.New("configure /dev/loop7: no such device")
	tests := []struct {
		name     string
		busy     int   // EBUSY answers before the last
		last     error // the answer after them
		allowed  int   // retries wait allows
		wantErr  error // nil: the device
		wantWait int   // calls of wait
	}{
		{"free at once", 0, nil, 100, nil, 0},
		{"taken 40 times", 40, nil, 100, nil, 40},
		{"another error", 3, other, 100, other, 3},
		{"taken past the budget", 100, nil, 20, unix.EBUSY, 21},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tries, waits := 0, 0
			got, err := claimLoop(func() (*os.File, error) {
				tries++
				if tries <= tc.busy {
					return nil, fmt.Errorf("configure /dev/loop%d: %w", tries, unix.EBUSY)
				}
				if tc.last != nil {
					return nil, tc.last
				}
				return dev, nil
			}, func(attempt int) bool {
				if attempt != waits {
					t.Errorf("wait(%d), want wait(%d)", attempt, waits)
				}
				waits++
				return waits <= tc.allowed
			})
			if tc.wantErr == nil && (err != nil || got != dev) {
				t.Errorf("claimLoop = %v, %v; want the device", got, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("claimLoop error %v, want %v", err, tc.wantErr)
			}
			if waits != tc.wantWait {
				t.Errorf("wait called %d times, want %d", waits, tc.wantWait)
			}
		})
	}
}

// TestAttachBackoff: the first retry is immediate, later ones wait a
// random time within a bound that doubles up to 20 ms.
func TestAttachBackoff(t *testing.T) {
	if d := attachBackoff(0); d != 0 {
		t.Errorf("attachBackoff(0) = %v, want 0", d)
	}
	for attempt := 1; attempt < 40; attempt++ {
		bound := min(20_000_000, 1_000_000<<min(attempt, 10))
		for range 20 {
			if d := attachBackoff(attempt); d <= 0 || d.Nanoseconds() > int64(bound) {
				t.Fatalf("attachBackoff(%d) = %v, want in (0, %dns]", attempt, d, bound)
			}
		}
	}
}
