package servertest

import (
	"slices"
	"testing"
)

// endingTB is a testing.TB that runs its cleanups on end and then panics
// on Log, as the testing package does once a test has completed.
type endingTB struct {
	testing.TB
	cleanups []func()
	ended    bool
	lines    int
}

func (f *endingTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *endingTB) Log(...any) {
	if f.ended {
		panic("Log in goroutine after the test has completed")
	}
	f.lines++
}

func (f *endingTB) end() {
	for _, fn := range slices.Backward(f.cleanups) {
		fn()
	}
	f.ended = true
}

// TestLogAfterTestEnds: a line logged after the test that owns the
// logger completed (a driver goroutine still trimming the clone pool)
// is dropped, where t.Log would panic and fail the whole package.
func TestLogAfterTestEnds(t *testing.T) {
	tb := &endingTB{TB: t}
	w := newTLogWriter(tb)
	if _, err := w.Write([]byte("during the test\n")); err != nil || tb.lines != 1 {
		t.Fatalf("write during the test: %d lines, %v", tb.lines, err)
	}
	tb.end()
	if n, err := w.Write([]byte("after the test\n")); err != nil || n != len("after the test\n") {
		t.Errorf("write after the test: %d, %v", n, err)
	}
}
