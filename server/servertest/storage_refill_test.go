package servertest_test

import (
	"context"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStorageSyncRefill: a bucket emptied behind the sync is refilled by a
// forced flush (POST …/sync/flush), and by the first flush of a server
// that starts, against each backend's real server. Before, the sync
// trusted its index of stored files and only files changed afterwards
// came back (session19-integ19.md, item 2).
func TestStorageSyncRefill(t *testing.T) {
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) { testStorageSyncRefill(t, kind) })
	}
}

func testStorageSyncRefill(t *testing.T, kind string) {
	r := startStorageRun(t, kind, nil)
	s, b, c, sb, prefix := r.s, r.b, r.c, r.sb, r.prefix
	ctx := context.Background()
	if _, err := c.WriteFile(ctx, sb.ID, api.FileCreateRequest{Path: "api.txt", Content: "written by the API\n"}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, sb.ID, `set -e
cd /workspace
mkdir -p 'd/ü b' many
printf 'unicode\n' > 'd/ü b/ü.txt'
: > empty
head -c 3000000 /dev/zero > big.bin
for i in $(seq 1 40); do echo "small $i" > many/f$i.txt; done`)
	if _, err := c.FlushSync(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	want := objtest.List(t, b, prefix)
	if len(want) != 44 || want["big.bin"] != 3000000 || want["d/ü b/ü.txt"] != 8 {
		t.Fatalf("after the first flush the bucket holds %d files (%v), want 44", len(want), want)
	}
	same := func() bool { return objtest.Holds(t, b, prefix, want) }

	// A forced flush lists the prefix and stores every file again.
	objtest.Clear(t, b, prefix)
	st, err := c.FlushSync(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !same() {
		t.Errorf("after a forced flush of the emptied bucket it holds %v, want %v", objtest.List(t, b, prefix), want)
	}
	if st.SyncedFiles != 44 {
		t.Errorf("synced_files = %d after the refill, want 44", st.SyncedFiles)
	}

	// A server that starts checks each sandbox's files at its first flush.
	s.Kill()
	objtest.Clear(t, b, prefix)
	s.Start(t)
	objtest.Wait(t, "every file back after the server's start", 2*storagesync.MaxBackoff, same)
}
