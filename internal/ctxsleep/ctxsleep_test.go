package ctxsleep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/ctxsleep"
)

// TestSleep: a wait ends when its time is up, or at once with the
// context's error when the context ends first.
func TestSleep(t *testing.T) {
	if err := ctxsleep.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep 1ms: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ctxsleep.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep an hour, ended: %v, want context.Canceled", err)
	}
}
