package faulttest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestSidecarKilled: a sidecar killed with SIGKILL while the server runs
// makes its sandbox lost (the issue asks for within a second; the
// latency is logged, the test waits for its budget), with a sandbox_lost
// entry in its audit log that live watchers receive; calls to it then
// answer 410 sandbox_lost with a hint, and a streamed exec running in it
// ends with a sandbox_lost error event. Other sandboxes keep answering.
func TestSidecarKilled(t *testing.T) {
	needRoot(t)
	s := servertest.New(t)
	c := newClient(s)
	ctx := context.Background()
	victim, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	bystander, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "bystander"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, victim.ID, api.ExecRequest{Command: "true"}); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		watched []string
	)
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		_ = c.WatchLog(wctx, victim.ID, "", func(e api.LogEntry) error {
			mu.Lock()
			watched = append(watched, e.Operation)
			mu.Unlock()
			return nil
		})
	}()
	defer func() { stopWatch(); <-watchDone }()
	poll(t, "the watch to replay the exec", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(watched, "exec")
	})

	// A streamed exec runs in it when it dies: its stream must end with
	// an error event, not just stop.
	streamed, streaming := make(chan error, 1), make(chan struct{})
	go func() {
		var once sync.Once
		_, err := c.ExecStream(ctx, victim.ID, api.ExecRequest{Command: "echo started; sleep 60", Timeout: 120}, func(api.ExecEvent) error {
			once.Do(func() { close(streaming) })
			return nil
		})
		streamed <- err
	}()
	<-streaming

	killed := time.Now()
	if err := syscall.Kill(jailPID(t, s, victim.ID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	took := poll(t, "the sandbox to be marked lost", 20*time.Second, func() bool {
		sb, err := c.Sandbox(ctx, victim.ID)
		return err == nil && sb.Status == api.StatusLost
	})
	t.Logf("lost %v after the kill (the issue asks for under a second)", took)

	_, err = c.Exec(ctx, victim.ID, api.ExecRequest{Command: "true"})
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Status != http.StatusGone || e.Code != api.CodeSandboxLost || e.Hint == "" {
		t.Errorf("exec in a lost sandbox = %v, want 410 sandbox_lost with a hint", err)
	}
	if err := <-streamed; apiCode(err) != api.CodeSandboxLost {
		t.Errorf("streamed exec when the sidecar died: %v, want an error event sandbox_lost", err)
	}
	poll(t, "the watcher to see sandbox_lost", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(watched, "sandbox_lost")
	})
	entries, head := wholeLog(t, c, victim.ID)
	// The loss is recorded by the system; the streamed exec the kill cut
	// short may record its own end (its error sandbox_lost) just before or
	// just after it.
	lost := slices.IndexFunc(entries, func(e api.LogEntry) bool {
		return e.Operation == "sandbox_lost" && e.Source == api.LogSourceSystem
	})
	if lost < 0 || entries[lost].StartedAt.Before(killed.Add(-time.Second)) {
		t.Errorf("log %+v, want a system sandbox_lost entry after the kill", entries)
	} else if after := entries[lost+1:]; len(after) > 1 || (len(after) == 1 && after[0].Operation != "exec") {
		t.Errorf("entries after sandbox_lost: %+v, want at most the cut exec's", after)
	}
	if err := api.VerifyLog(entries, head.HeadSeq, head.HeadHash); err != nil {
		t.Errorf("VerifyLog: %v", err)
	}
	if res, err := c.Exec(ctx, bystander.ID, api.ExecRequest{Command: "echo ok"}); err != nil || res.Stdout != "ok\n" {
		t.Errorf("exec in the other sandbox = %+v, %v", res, err)
	}
}

// TestDeleteIsNoLoss: deleting a sandbox while calls to it run is a
// deletion, not a loss. The sidecar's death cuts the calls short, but the
// delete answers 204, the sandbox is destroyed (not lost), its log has no
// sandbox_lost entry, and the cut calls answer 409 conflict: a JSON exec
// as an error, a streamed exec with an error event. (Before, the cut call
// asked the driver, found the sidecar dead, and marked the sandbox lost
// under the delete, which then answered 404.)
func TestDeleteIsNoLoss(t *testing.T) {
	needRoot(t)
	s := servertest.New(t)
	c := newClient(s)
	ctx := context.Background()
	for i := range 3 {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		plain, streamed := make(chan error, 1), make(chan error, 1)
		streaming := make(chan struct{})
		go func() {
			_, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "touch /tmp/plain; sleep 60", Timeout: 120})
			plain <- err
		}()
		go func() {
			var once sync.Once
			_, err := c.ExecStream(ctx, sb.ID, api.ExecRequest{Command: "echo started; sleep 60", Timeout: 120}, func(api.ExecEvent) error {
				once.Do(func() { close(streaming) })
				return nil
			})
			streamed <- err
		}()
		<-streaming
		poll(t, "the JSON exec to start", 20*time.Second, func() bool {
			res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "test -e /tmp/plain"})
			return err == nil && res.ExitCode == 0
		})
		if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
			t.Errorf("delete %d with calls in flight: %v", i, err)
		}
		for what, ch := range map[string]chan error{"JSON exec": plain, "streamed exec": streamed} {
			if err := <-ch; apiCode(err) != api.CodeConflict {
				t.Errorf("%s cut by the delete: %v, want 409 conflict", what, err)
			}
		}
		got, err := c.Sandbox(ctx, sb.ID)
		if err != nil || got.Status != api.StatusDestroyed {
			t.Errorf("sandbox %d after the delete: %+v, %v; want destroyed", i, got, err)
		}
		entries, _ := wholeLog(t, c, sb.ID)
		for _, e := range entries {
			if e.Operation == "sandbox_lost" {
				t.Errorf("a deleted sandbox has a sandbox_lost entry: %+v", e)
			}
		}
	}
}
