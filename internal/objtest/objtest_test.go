package objtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/testport"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStartPortTaken: a port of the store's taken between the pick and
// the bind (another test's server holding it) does not fail the test that
// wanted the store: the store starts again on other ports. CI once lost a
// run to this (SeaweedFS's volume server could not bind its port, exited,
// and the test waited 90 s for an S3 endpoint that never came up).
func TestStartPortTaken(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		taken      int // which of the store's ports is the held one
	}{
		{"s3 volume", "s3", 2}, // the volume server's HTTP port, as in CI
		{"s3 endpoint", "s3", 0},
		{"azure", "azure", 0},
		{"gcs", "gcs", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := testport.Hold(t, tc.taken)
			s := start(t, tc.kind, held.PickN)
			if held.Picks() < 2 {
				t.Fatalf("the store started on a held port (%d picks)", held.Picks())
			}
			if strings.Contains(s.Config.Endpoint+s.Config.ConnectionString, fmt.Sprintf(":%d/", held.Port())) {
				t.Fatalf("the store's address names the held port %d: %s%s", held.Port(), s.Config.Endpoint, s.Config.ConnectionString)
			}
			b, err := storagesync.Open(context.Background(), s.Config)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Put(context.Background(), "k", strings.NewReader("v"), 1); err != nil {
				t.Fatalf("put into the restarted store: %v", err)
			}
		})
	}
}

// TestRestart: after Stop and Start a store answers on its old address
// with its bucket there (Azurite can lose a container made just before a
// stop: Start makes it again) and, but on Azurite, what it held before.
func TestRestart(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			s := Start(t, kind)
			ctx := context.Background()
			b, err := storagesync.Open(ctx, s.Config)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Put(ctx, "before", strings.NewReader("v"), 1); err != nil {
				t.Fatal(err)
			}
			s.Stop()
			s.Start(t)
			if b, err = storagesync.Open(ctx, s.Config); err != nil {
				t.Fatalf("open after restart: %v", err)
			}
			if err := b.Put(ctx, "after", strings.NewReader("v"), 1); err != nil {
				t.Fatalf("put after restart: %v", err)
			}
			want := 2
			if kind == "azure" {
				// Azurite keeps its metadata in memory and writes it
				// out every few seconds: a kill loses the last puts
				// (and can lose the container, which Start makes
				// again). Tests must not rely on them.
				want = 1
			}
			if got := List(t, b, ""); len(got) < want || got["after"] != 1 {
				t.Fatalf("after restart the bucket holds %v, want after (and before, but on Azurite)", got)
			}
		})
	}
}
