package faulttest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// TestServerKilledMidLifecycle: the real boxkite-server is SIGKILLed
// while a pause, a snapshot and a fork are under way, after a pause, a
// snapshot and a fork it acknowledged. After `boxkite up`, what was
// acknowledged is there and whole (the paused sandbox resumes, the
// snapshot is completed and restores with the file it was taken with,
// the fork has its disk), and what was not is absent, failed, or whole:
// never a snapshot listed completed that does not restore, a pending one
// that stays pending, or a live sandbox without its disk. The kill comes
// after an observable step (the in-flight snapshot's row is listed, or
// its call returned), not after a sleep; what it cuts varies from run to
// run, and each outcome is checked.
func TestServerKilledMidLifecycle(t *testing.T) {
	needRoot(t)
	// When to kill: once the in-flight snapshot's row is listed, or once
	// the in-flight fork's first child is (four sandboxes before it).
	tests := []struct {
		name string
		cut  func(ctx context.Context, c *client.Client, src string) bool
	}{
		{"a snapshot listed", func(ctx context.Context, c *client.Client, src string) bool {
			sns, err := c.Snapshots(ctx, src)
			return err == nil && slices.ContainsFunc(sns, func(sn api.Snapshot) bool { return sn.Label == "inflight" })
		}},
		{"a fork child listed", func(ctx context.Context, c *client.Client, _ string) bool {
			sbs, err := c.ListSandboxes(ctx, false)
			return err == nil && len(sbs) > 4
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { killMidLifecycle(t, tt.cut) })
	}
}

func killMidLifecycle(t *testing.T, cut func(ctx context.Context, c *client.Client, src string) bool) {
	s := newStack(t, "BOXKITE_SERVER_WARM_POOL=0")
	s.up()
	c := s.client()
	ctx := context.Background()
	create := func(label string) string {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: label})
		if err != nil {
			t.Fatalf("create %s: %v", label, err)
		}
		if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "echo " + label + " > mark.txt && sync"}); err != nil {
			t.Fatalf("write the mark in %s: %v", label, err)
		}
		return sb.ID
	}
	paused, src, inflightPause := create("paused"), create("src"), create("pausing")
	if _, err := c.PauseSandbox(ctx, paused, ""); err != nil {
		t.Fatalf("pause: %v", err)
	}
	acked, err := c.CreateSnapshot(ctx, src, "acked")
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	forks, err := c.ForkSandbox(ctx, src, 1)
	if err != nil || len(forks) != 1 {
		t.Fatalf("fork = %v, %v", forks, err)
	}

	// The operations the kill cuts short, or not.
	var wg sync.WaitGroup
	var pending sync.WaitGroup
	pending.Add(3)
	allDone := make(chan struct{})
	go func() { pending.Wait(); close(allDone) }()
	wg.Go(func() { defer pending.Done(); _, _ = c.PauseSandbox(ctx, inflightPause, "") })
	wg.Go(func() { defer pending.Done(); _, _ = c.ForkSandbox(ctx, src, 2) })
	wg.Go(func() { defer pending.Done(); _, _ = c.CreateSnapshot(ctx, src, "inflight") })
	poll(t, "the kill's step, or every call answered", 60*time.Second, func() bool {
		select {
		case <-allDone:
			return true
		default:
		}
		return cut(ctx, c, src)
	})
	s.killServer()
	wg.Wait()

	s.up()
	c = s.client()
	if sb, err := c.Sandbox(ctx, paused); err != nil || sb.Status != api.StatusPaused {
		t.Errorf("acknowledged pause after the restart: %+v, %v, want paused", sb, err)
	}
	if sn, err := c.Snapshot(ctx, acked.ID); err != nil || sn.Status != api.SnapshotCompleted {
		t.Errorf("acknowledged snapshot after the restart: %+v, %v, want completed", sn, err)
	}
	wantMark(t, c, paused, "paused")
	wantMark(t, c, forks[0].ID, "src")
	checkSnapshots(t, c, src)
	checkLiveSandboxes(t, c)
	for _, id := range []string{paused, src, inflightPause} {
		entries, head := wholeLog(t, c, id)
		if err := api.VerifyLog(entries, head.HeadSeq, head.HeadHash); err != nil {
			t.Errorf("VerifyLog of %s after the kill: %v", id, err)
		}
	}
}

// checkSnapshots: every snapshot of src is completed and restores with
// src's mark, or failed; none stays pending.
func checkSnapshots(t *testing.T, c *client.Client, src string) {
	t.Helper()
	ctx := context.Background()
	var sns []api.Snapshot
	poll(t, "no snapshot pending after the restart", 30*time.Second, func() bool {
		var err error
		sns, err = c.Snapshots(ctx, src)
		return err == nil && !slices.ContainsFunc(sns, func(sn api.Snapshot) bool { return sn.Status == api.SnapshotPending })
	})
	for _, sn := range sns {
		switch sn.Status {
		case api.SnapshotFailed:
			t.Logf("snapshot %s (%s) failed: the kill cut it", sn.ID, sn.Label)
		case api.SnapshotCompleted:
			sb, err := c.RestoreSnapshot(ctx, sn.ID, "restored-"+sn.Label)
			if err != nil {
				t.Errorf("restore completed snapshot %s (%s): %v", sn.ID, sn.Label, err)
				continue
			}
			wantMark(t, c, sb.ID, "src")
		default:
			t.Errorf("snapshot %s (%s) is %s after the restart", sn.ID, sn.Label, sn.Status)
		}
	}
}

// checkLiveSandboxes: every sandbox listed active or paused after the
// restart answers with its disk (a paused one once resumed).
func checkLiveSandboxes(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := context.Background()
	sbs, err := c.ListSandboxes(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sbs {
		switch sb.Status {
		case api.StatusActive:
		case api.StatusPaused:
			if _, err := c.ResumeSandbox(ctx, sb.ID); err != nil {
				t.Errorf("resume %s (%s) after the restart: %v", sb.ID, sb.Label, err)
				continue
			}
		default:
			t.Logf("sandbox %s (%s) is %s", sb.ID, sb.Label, sb.Status)
			continue
		}
		t.Logf("sandbox %s (%s) is %s", sb.ID, sb.Label, sb.Status)
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "cat mark.txt"})
		if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) == "" {
			t.Errorf("live sandbox %s (%s) after the restart: %+v, %v, want its mark", sb.ID, sb.Label, res, err)
		}
	}
}

// wantMark resumes sandbox id if it is paused, then checks its mark.txt.
func wantMark(t *testing.T, c *client.Client, id, want string) {
	t.Helper()
	ctx := context.Background()
	if sb, err := c.Sandbox(ctx, id); err == nil && sb.Status == api.StatusPaused {
		if _, err := c.ResumeSandbox(ctx, id); err != nil {
			t.Errorf("resume %s: %v", id, err)
			return
		}
	}
	res, err := c.Exec(ctx, id, api.ExecRequest{Command: "cat mark.txt"})
	if err != nil || strings.TrimSpace(res.Stdout) != want {
		t.Errorf("mark of %s = %+v, %v, want %q", id, res, err, want)
	}
}
