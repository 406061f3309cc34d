package kube_test

import (
	"context"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStorageSyncRefill is servertest's test of the same name on the kube
// driver: a bucket emptied behind the sync is refilled by a forced flush
// (POST …/sync/flush), and by the first flush of a control plane that
// starts (the pods keep running across the restart), the files read from
// each pod's sidecar as every flush reads them.
func TestStorageSyncRefill(t *testing.T) {
	for _, kind := range []string{"gcs", "s3"} {
		t.Run(kind, func(t *testing.T) { testStorageSyncRefill(t, kind) })
	}
}

func testStorageSyncRefill(t *testing.T, kind string) {
	e, b := storageEnv(t, kind, kube.Config{})
	e.start(t)
	c := e.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := c.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "boxkite/" + acct.ID + "/" + sb.ID + "/"
	if _, err := c.WriteFile(ctx, sb.ID, api.FileCreateRequest{Path: "api.txt", Content: "written by the API\n"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Timeout: 60, Command: `set -e
mkdir -p 'd/ü b' many
printf 'unicode\n' > 'd/ü b/ü.txt'
: > empty
head -c 3000000 /dev/zero > big.bin
for i in $(seq 1 20); do echo "small $i" > many/f$i.txt; done`})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("write the files: %+v, %v", res, err)
	}
	if _, err := c.FlushSync(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	want := objtest.List(t, b, prefix)
	if len(want) != 24 || want["big.bin"] != 3000000 || want["d/ü b/ü.txt"] != 8 {
		t.Fatalf("after the first flush the bucket holds %d files (%v), want 24", len(want), want)
	}
	same := func() bool { return objtest.Holds(t, b, prefix, want) }

	// A forced flush lists the prefix and stores every file again.
	objtest.Clear(t, b, prefix)
	st, err := c.FlushSync(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !same() || st.SyncedFiles != 24 {
		t.Errorf("after a forced flush of the emptied bucket: %v (synced_files %d), want %v", objtest.List(t, b, prefix), st.SyncedFiles, want)
	}

	// A control plane that starts checks each sandbox's files at its
	// first flush; the pod ran on meanwhile.
	e.stop()
	objtest.Clear(t, b, prefix)
	e.start(t)
	objtest.Wait(t, "every file back after the control plane's start", 2*storagesync.MaxBackoff, same)
}
