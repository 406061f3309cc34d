package main

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAnonymousMemory: heapWorthFreeing's measure of the process's
// anonymous memory grows by the pages the process touches. The pages are
// a mapping of the test's own, not Go's heap, whose freed memory a second
// run (-count) would reuse. 64 MiB, so that what the other tests running
// beside it free meanwhile (the runtime returned ~4 MiB of heap during an
// 8 MiB touch in a CI run) stays well under a quarter of it.
func TestAnonymousMemory(t *testing.T) {
	const n = 64 << 20
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	before, err := anonymousMemory()
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 {
		t.Fatalf("anonymous memory %d, want > 0", before)
	}
	for i := 0; i < n; i += os.Getpagesize() {
		b[i] = 1
	}
	after, err := anonymousMemory()
	if err != nil {
		t.Fatal(err)
	}
	// The kernel's counters are per CPU and synced in batches: about.
	if grew := after - before; grew < n*3/4 {
		t.Errorf("anonymous memory grew by %d bytes after touching %d, want about %d", grew, n, n)
	}
}
