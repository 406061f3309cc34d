package faulttest

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestServerKilledMidDelete: a delete whose teardown the driver finished
// is cut before its row is written (the database turns read-only at that
// instant, as a SIGKILL there would leave it), and the server is killed
// and started again. The sandbox ends destroyed (reason deleted, a
// sandbox.destroyed event, no sandbox_lost entry, nothing of it left on
// the host), not lost; while the row could not be written, calls to it
// are refused as to a sandbox being destroyed, not answered 5xx.
func TestServerKilledMidDelete(t *testing.T) {
	needRoot(t)
	t.Run("sqlite", func(t *testing.T) {
		mnt := smallFS(t, 64)
		db := filepath.Join(mnt, "boxkite.db")
		files := []string{db, db + "-wal"}
		killMidDelete(t, servertest.WithDBPath(db),
			func() { immutable(t, files, true) }, func() { immutable(t, present(files), false) })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := servertest.PostgresDSN(t)
		if dsn == "" {
			t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
		}
		killMidDelete(t, servertest.WithDSN(dsn),
			func() { setReadOnly(t, dsn, true) }, func() { setReadOnly(t, dsn, false) })
	})
}

// killMidDelete deletes a sandbox, breaks the database (fault) between
// the driver's teardown and the row's write, kills the server, mends
// the database and starts the server again.
func killMidDelete(t *testing.T, store servertest.Option, fault, mend func()) {
	ctx := context.Background()
	var target atomic.Value // the sandbox whose teardown is cut
	target.Store("")
	tornDown, faulted := make(chan struct{}), make(chan struct{})
	cfg := server.Config{
		Webhooks: server.WebhookConfig{AllowLoopback: true, BackoffBase: time.Minute, Poll: 20 * time.Millisecond},
		AfterTeardownForTests: func(id string) {
			if target.CompareAndSwap(id, "") { // once: not again when the restart finishes it
				close(tornDown)
				<-faulted
			}
		},
	}
	s := servertest.New(t, store, servertest.WithConfig(cfg))
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(recv.Close)
	c := newClient(s)
	hook, err := c.CreateWebhook(ctx, api.CreateWebhookRequest{
		URL: recv.URL + "/hook", EventTypes: []string{api.EventSandboxDestroyed, api.EventSandboxLost},
	})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "echo hi > mark.txt"}); err != nil {
		t.Fatal(err)
	}
	pid := jailPID(t, s, sb.ID)
	target.Store(sb.ID)

	deleted := make(chan error, 1)
	go func() { deleted <- c.DeleteSandbox(ctx, sb.ID) }()
	select {
	case <-tornDown:
	case err := <-deleted:
		t.Fatalf("delete answered %v before the driver's teardown ended", err)
	case <-time.After(2 * time.Minute): // a hang guard, not a latency
		t.Fatal("the driver's teardown did not end")
	}
	fault()
	close(faulted)
	err = <-deleted
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Status < 500 || e.Hint == "" {
		t.Fatalf("delete with the database broken after the teardown = %v, want a 5xx with a hint", err)
	}
	// Listed as it was, as docs/local-mode.md says, but not callable.
	if got, err := c.Sandbox(ctx, sb.ID); err != nil || got.Status != api.StatusActive {
		t.Errorf("sandbox whose removal is not recorded = %+v, %v, want listed active", got, err)
	}
	_, err = c.Exec(ctx, sb.ID, api.ExecRequest{Command: "true"})
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Status != http.StatusConflict || !strings.Contains(e.Message, "being destroyed") {
		t.Errorf("exec in a sandbox whose removal is not recorded = %v, want 409 being destroyed", err)
	}

	s.Kill()
	mend()
	s.Start(t)
	c = newClient(s)
	got, err := c.Sandbox(ctx, sb.ID)
	if err != nil || got.Status != api.StatusDestroyed || got.DestroyReason != "deleted" {
		t.Fatalf("sandbox deleted before the kill, after the restart = %+v, %v, want destroyed (deleted)", got, err)
	}
	entries, head := wholeLog(t, c, sb.ID)
	if err := api.VerifyLog(entries, head.HeadSeq, head.HeadHash); err != nil {
		t.Errorf("VerifyLog: %v", err)
	}
	for _, e := range entries {
		if e.Operation == "sandbox_lost" {
			t.Errorf("the log of a deleted sandbox has %s: %s", e.Operation, e.Detail)
		}
	}
	var events []string
	poll(t, "the sandbox.destroyed delivery", time.Minute, func() bool {
		ds, err := c.WebhookDeliveries(ctx, hook.ID, 100, 0)
		events = events[:0]
		for _, d := range ds {
			events = append(events, d.EventType)
		}
		return err == nil && slices.Contains(events, api.EventSandboxDestroyed)
	})
	if slices.Contains(events, api.EventSandboxLost) {
		t.Errorf("deliveries = %v, want no %s", events, api.EventSandboxLost)
	}
	wantGone(t, s, sb.ID, pid)
}

// present is those of files that exist (SQLite removes its WAL when the
// store closes, an immutable one too).
func present(files []string) []string {
	return slices.DeleteFunc(slices.Clone(files), func(p string) bool {
		_, err := os.Stat(p)
		return err != nil
	})
}

// wantGone: nothing of sandbox id is left: its jail's process, the
// driver's record of it, its files under the state directory.
func wantGone(t *testing.T, s *servertest.Server, id string, pid int) {
	t.Helper()
	if err := unix.Kill(pid, 0); err == nil {
		t.Errorf("the jail (pid %d) of the destroyed sandbox still runs", pid)
	}
	observed, err := s.Driver.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range observed {
		if o.ID == id {
			t.Errorf("the driver still has the destroyed sandbox %s", id)
		}
	}
	_ = filepath.WalkDir(s.StateDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), id) {
			t.Errorf("left on the host: %s", path)
		}
		return nil
	})
}

// TestFrozenSandboxDeletedOnFullDisk: a sandbox the storage watch froze
// (the host's disk filled) is deleted, and the database cannot record the
// removal after the driver tore it down. Calls to it answer 409 "being
// destroyed", not 507 "frozen"; once space is back the server records
// the removal by itself, without the delete being retried.
func TestFrozenSandboxDeletedOnFullDisk(t *testing.T) {
	needRoot(t)
	host := smallFS(t, 320)
	db := filepath.Join(host, "boxkite.db")
	var target atomic.Value
	target.Store("")
	cfg := server.Config{AfterTeardownForTests: func(id string) {
		if target.CompareAndSwap(id, "") {
			// A database that cannot take the removal, as on a full disk
			// (where whether one small write still fits is luck).
			immutable(t, []string{db, db + "-wal"}, true)
		}
	}}
	s := servertest.New(t, servertest.WithStateDir(host), servertest.WithDBPath(db), servertest.WithConfig(cfg),
		servertest.WithDriverConfig(func(c *local.Config) { c.Host.MinFreeDisk = 96 << 20 }))
	c := newClient(s)
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "frozen"})
	if err != nil {
		t.Fatal(err)
	}
	filler := ballast(t, host, freeBytes(t, host)-16<<20)
	poll(t, "the storage watch to freeze the sandbox", time.Minute, func() bool {
		_, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "true"})
		e, ok := errors.AsType[*api.Error](err)
		return ok && e.Status == http.StatusInsufficientStorage && strings.Contains(e.Message, "is frozen")
	})
	target.Store(sb.ID)
	err = c.DeleteSandbox(ctx, sb.ID)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Status < 500 || e.Hint == "" {
		t.Fatalf("delete the database could not record = %v, want a 5xx with a hint", err)
	}
	notFrozen := func(when string) {
		t.Helper()
		_, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "true"})
		if e, ok := errors.AsType[*api.Error](err); !ok || e.Status != http.StatusConflict {
			t.Errorf("exec in the torn-down sandbox %s = %v, want 409", when, err)
		}
	}
	notFrozen("while the database is broken")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	immutable(t, present([]string{db, db + "-wal"}), false)
	poll(t, "the removal to be recorded without a retry", time.Minute, func() bool {
		got, err := c.Sandbox(ctx, sb.ID)
		return err == nil && got.Status == api.StatusDestroyed && got.DestroyReason == "deleted"
	})
	notFrozen("once space is back")
}
