package main

import (
	"os"
	"runtime"
	"testing"
)

// TestAnonymousMemory: heapWorthFreeing's measure of the process's
// anonymous memory grows by what the process touches.
func TestAnonymousMemory(t *testing.T) {
	before, err := anonymousMemory()
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 {
		t.Fatalf("anonymous memory %d, want > 0", before)
	}
	const n = 8 << 20
	b := make([]byte, n)
	for i := 0; i < n; i += os.Getpagesize() {
		b[i] = 1
	}
	after, err := anonymousMemory()
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	if grew := after - before; grew < n*7/8 {
		t.Errorf("anonymous memory grew by %d bytes after touching %d, want about %d", grew, n, n)
	}
}
