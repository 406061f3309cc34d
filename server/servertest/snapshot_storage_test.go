package servertest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestSnapshotsInStorage is issue 26's snapshots on the local driver: with
// object storage configured (fake-gcs-server here), a snapshot's disk
// image is stored in the bucket — its data runs, not its holes — before
// the snapshot is answered completed; with the host's snapshot store gone
// (a replaced host), a restore imports it from the bucket and the files
// come back byte-exact, modes included; deleting the snapshot deletes its
// object.
func TestSnapshotsInStorage(t *testing.T) {
	needRoot(t)
	obj := objtest.Start(t, "gcs")
	b, err := storagesync.Open(context.Background(), obj.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Without the clone pool the snapshot store is under the state
	// directory, where the test can take it away.
	s := servertest.New(t, servertest.WithConfig(server.Config{Storage: server.StorageConfig{Backend: b, Prefix: "boxkite"}}))
	c := client.New(s.BaseURL, s.APIKey)
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	check := "cd /workspace && sha256sum d/big small && stat -c %a small"
	sums := mustExec(t, c, sb.ID, "mkdir -p /workspace/d && head -c 20M /dev/urandom > /workspace/d/big && echo one > /workspace/small && "+
		"chmod 640 /workspace/small && "+check)
	snap, err := c.CreateSnapshot(ctx, sb.ID, "stored")
	if err != nil || snap.Status != api.SnapshotCompleted {
		t.Fatalf("snapshot: %+v, %v", snap, err)
	}
	object := "boxkite/" + snap.StorageKeyPrefix + "/"
	size := objtest.List(t, b, object)["data"]
	if size < 20<<20 || size > 200<<20 {
		t.Errorf("the bucket holds %d bytes for a disk with 20 MiB of files (want its data, not its holes)", size)
	}
	t.Logf("a disk with 20 MiB of files: %d MiB in the bucket", size>>20)
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}

	// The host's snapshot store is lost.
	images, err := filepath.Glob(filepath.Join(s.StateDir, "snapshots", "sha256-*.img"))
	if err != nil || len(images) != 1 {
		t.Fatalf("snapshot store: %v, %v; want one image", images, err)
	}
	if err := os.Remove(images[0]); err != nil {
		t.Fatal(err)
	}
	restored, err := c.RestoreSnapshot(ctx, snap.ID, "from-the-bucket")
	if err != nil {
		t.Fatalf("restore from the bucket: %v", err)
	}
	if got := mustExec(t, c, restored.ID, check); got != sums {
		t.Errorf("restored files:\n%s\nwant\n%s", got, sums)
	}
	if _, err := os.Stat(images[0]); err != nil {
		t.Errorf("the imported image: %v", err)
	}
	if err := c.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
	if got := objtest.List(t, b, object); len(got) != 0 {
		t.Errorf("after the delete the bucket holds %v", got)
	}
}
