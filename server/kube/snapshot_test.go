package kube_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestSnapshots is issue 22 on the kube driver: a snapshot copies the
// workspace through the sidecar (method sidecar-copy) into the snapshot
// directory; a restore starts a new pod with those files, byte-exact,
// after the parent is gone; a fork ×2 gives children with the parent's
// files whose writes no other sees; a claimed warm pod is snapshotted as a
// cold one is; deleting the snapshot removes its file.
func TestSnapshots(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, kube.Config{SnapshotDir: dir, PoolSize: 1})
	e.start(t)
	c := e.client()
	ctx := context.Background()
	exec := func(id, cmd string) string {
		t.Helper()
		res, err := c.Exec(ctx, id, api.ExecRequest{Command: cmd, Timeout: 60})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s in %s: %+v, %v", cmd, id, res, err)
		}
		return res.Stdout
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sums := exec(sb.ID, "mkdir -p d && head -c 3M /dev/urandom > d/big && echo one > small && chmod 640 small && "+
		"sha256sum d/big small && stat -c %a small")
	snap, err := c.CreateSnapshot(ctx, sb.ID, "k")
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if snap.Status != api.SnapshotCompleted || snap.Method != "sidecar-copy" || snap.SizeBytes < 3<<20 {
		t.Errorf("snapshot answered %+v", snap)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "sha256-*.tar")); len(files) != 1 {
		t.Errorf("snapshot directory holds %v, want one sha256-….tar", files)
	}
	exec(sb.ID, "echo two > small && rm d/big")
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	restored, err := c.RestoreSnapshot(ctx, snap.ID, "back")
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	check := "sha256sum d/big small && stat -c %a small"
	if got := exec(restored.ID, check); got != sums {
		t.Errorf("restored files:\n%s\nwant\n%s", got, sums)
	}

	kids, err := c.ForkSandbox(ctx, restored.ID, 2)
	if err != nil || len(kids) != 2 {
		t.Fatalf("fork: %v, %v", kids, err)
	}
	for _, k := range kids {
		if got := exec(k.ID, check); got != sums {
			t.Errorf("child %s files:\n%s\nwant\n%s", k.ID, got, sums)
		}
	}
	exec(kids[0].ID, "echo mine > small")
	for _, id := range []string{kids[1].ID, restored.ID} {
		if got := exec(id, "cat small"); got != "one\n" {
			t.Errorf("%s sees %q after a write in a sibling, want one", id, got)
		}
	}

	if err := c.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
	left, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(left) != 0 {
		t.Errorf("snapshot directory after the delete: %v, %v (the fork's copy and the snapshot should be gone)", left, err)
	}
}
