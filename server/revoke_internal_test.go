package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
)

// TestRevocationsDemote: a demotion to count n ends the requests of the
// key authenticated at a lower count, with authz.ErrCredentialDemoted,
// and those that start watching a moment later; requests at count n (the
// key as a member's, or an admin's again after a promotion back) go on,
// and a late notice of an older demotion ends nothing new.
func TestRevocationsDemote(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name      string
		before    []int64 // demotions done before the watch, in order
		watchAt   int64   // the request's count
		after     int64   // a demotion done after the watch starts (0: none)
		wantEnded bool
	}{
		{name: "behind the demotion", watchAt: 0, after: 1, wantEnded: true},
		{name: "at the demotion's count", watchAt: 1, after: 1},
		{name: "watching just after the demotion", before: []int64{1}, watchAt: 0, wantEnded: true},
		{name: "authenticated after the demotion", before: []int64{1}, watchAt: 1},
		{name: "a late notice of an older demotion", before: []int64{2, 1}, watchAt: 1, wantEnded: true},
		{name: "a late notice after the watch", before: []int64{2}, watchAt: 2, after: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rv := newRevocations()
			for _, n := range c.before {
				rv.demote("k", n, t0)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			stop := rv.watch("k", cancel, nil, c.watchAt, t0.Add(time.Second))
			defer stop()
			other, cancelOther := context.WithCancelCause(context.Background())
			defer cancelOther(nil)
			defer rv.watch("other", cancelOther, nil, 0, t0)()
			if c.after > 0 {
				rv.demote("k", c.after, t0.Add(2*time.Second))
			}
			ended := ctx.Err() != nil
			if ended != c.wantEnded {
				t.Fatalf("ended = %v, want %v", ended, c.wantEnded)
			}
			if ended && !errors.Is(context.Cause(ctx), authz.ErrCredentialDemoted) {
				t.Errorf("cause %v, want ErrCredentialDemoted", context.Cause(ctx))
			}
			if other.Err() != nil {
				t.Error("another key's request ended")
			}
		})
	}
}
