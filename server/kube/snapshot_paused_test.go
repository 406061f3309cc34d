package kube_test

import (
	"context"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestSnapshotPaused: a paused sandbox (no pod on kube) is snapshotted
// and forked as on the local driver, from the copy its pause made; the
// snapshot restores and the fork starts with its files, and the sandbox
// still resumes with them.
func TestSnapshotPaused(t *testing.T) {
	e := newEnv(t, kube.Config{SnapshotDir: t.TempDir()})
	e.start(t)
	c := e.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cat := func(id string) string {
		t.Helper()
		res, err := c.Exec(ctx, id, api.ExecRequest{Command: "cat kept.txt"})
		if err != nil {
			t.Fatalf("cat in %s: %v", id, err)
		}
		return res.Stdout
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "echo kept > kept.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
		t.Fatal(err)
	}
	snap, err := c.CreateSnapshot(ctx, sb.ID, "paused")
	if err != nil || snap.Status != api.SnapshotCompleted || snap.SizeBytes == 0 {
		t.Fatalf("snapshot of the paused sandbox: %+v, %v", snap, err)
	}
	forks, err := c.ForkSandbox(ctx, sb.ID, 1)
	if err != nil || len(forks) != 1 {
		t.Fatalf("fork of the paused sandbox: %+v, %v", forks, err)
	}
	if got := cat(forks[0].ID); got != "kept\n" {
		t.Errorf("fork's kept.txt = %q", got)
	}
	restored, err := c.RestoreSnapshot(ctx, snap.ID, "")
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := cat(restored.ID); got != "kept\n" {
		t.Errorf("restored kept.txt = %q", got)
	}
	if _, err := c.ResumeSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("resume after the copies: %v", err)
	}
	if got := cat(sb.ID); got != "kept\n" {
		t.Errorf("resumed kept.txt = %q", got)
	}
}
