package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// The owners of pending snapshots between servers on one Postgres
// database (session 24): a server that starts leaves the snapshots a
// live server is taking, and a live server fails those of one whose
// heartbeat ended (bench/issue27/session24-snapowner.md).

// snapReplicas starts n servers on one Postgres database, each on the
// fake driver with snapshots, whose copies of sandbox held's block until
// release is closed: entered gets the name of the server whose copy
// began. It returns the servers, their drivers and the database.
func snapReplicas(t *testing.T, n int, cfg server.Config) ([]*env, []*snapFake, string) {
	t.Helper()
	var drivers []*snapFake
	wrap := func(d *fakeDriver) model.Driver {
		sd := &snapFake{fakeDriver: d}
		drivers = append(drivers, sd)
		return sd
	}
	rs, dsn := newReplicasWith(t, n, cfg, wrap)
	return rs, drivers, dsn
}

// holdCopies makes d's copies of sandbox id block until release is
// closed; entered is closed when the first began.
func holdCopies(d *snapFake, id string) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	d.mu.Lock()
	defer d.mu.Unlock()
	d.SnapshotFunc = func(_ context.Context, sid string, _ bool) (model.SnapshotRef, error) {
		if sid == id {
			close(entered)
			<-release
		}
		return model.SnapshotRef{Key: "key-" + sid, SizeBytes: 1, Method: "copy"}, nil
	}
	return entered, release
}

// snapshotAsync posts a snapshot of sandbox id to e and sends its answer.
func snapshotAsync(e *env, id string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		resp, body := e.do("POST", sandboxPath(id, "/snapshots"), e.KeyA, api.CreateSnapshotRequest{Label: "mid-copy"})
		ch <- answer{resp.StatusCode, body}
	}()
	return ch
}

type answer struct {
	code int
	body []byte
}

// waitClosed waits for ch, failing t after a hang guard.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestReplicaStartLeavesLiveSnapshot: a server that starts while another
// is copying a snapshot leaves the pending snapshot to it (its owner's
// heartbeat is alive), and the snapshot completes (201) and restores. It
// was marked failed by the start, which took every pending snapshot for
// one a crash interrupted, and answered 409 (session22-snapclaim22.md).
func TestReplicaStartLeavesLiveSnapshot(t *testing.T) {
	cfg := server.Config{RateLimits: server.RateLimits{Lifecycle: 1000, Snapshot: 1000}}
	rs, ds, dsn := snapReplicas(t, 1, cfg)
	a := rs[0]
	sb := a.create(a.KeyA, api.CreateSandboxRequest{})
	entered, release := holdCopies(ds[0], sb.ID)
	snapped := snapshotAsync(a, sb.ID)
	waitClosed(t, entered, "the first server's copy")

	// The second server starts mid-copy: Init reconciles.
	var bd *snapFake
	b, _ := addReplica(t, a, dsn, cfg, func(d *fakeDriver) model.Driver { bd = &snapFake{fakeDriver: d}; return bd })
	close(release)
	got := <-snapped
	if got.code != http.StatusCreated {
		t.Fatalf("the snapshot taken while another server started: %d %s, want 201", got.code, got.body)
	}
	var sn api.Snapshot
	mustUnmarshal(t, got.body, &sn)
	resp, body := b.do("GET", "/v1/snapshots/"+sn.ID, b.KeyA, nil)
	var read api.Snapshot
	mustUnmarshal(t, body, &read)
	if resp.StatusCode != http.StatusOK || read.Status != api.SnapshotCompleted {
		t.Errorf("the snapshot read through the second server: %d %s, want completed", resp.StatusCode, body)
	}
	resp, body = b.do("POST", "/v1/snapshots/"+sn.ID+"/restore", b.KeyA, api.RestoreSnapshotRequest{})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("restore through the second server: %d %s, want 201", resp.StatusCode, body)
	}
	if created := bd.Created(); len(created) != 1 || created[0].FromSnapshot != "key-"+sb.ID {
		t.Errorf("the second server's driver started %+v, want one sandbox from key-%s", created, sb.ID)
	}
}

// TestReplicaSweepFailsDeadServersSnapshot: a server that dies mid-copy
// (its Run, and so its heartbeat, stops) leaves its snapshot pending; once
// its heartbeat ended another server's sweep marks it failed, and the
// copy, if it ever ends, answers 409 with the documented message
// (docs/snapshots.md). Before, the snapshot stayed pending until a
// server started.
func TestReplicaSweepFailsDeadServersSnapshot(t *testing.T) {
	cfg := server.Config{
		RateLimits:     server.RateLimits{Lifecycle: 1000, Snapshot: 1000},
		ReaperInterval: 10 * time.Millisecond, // how often Run looks at its heartbeat's clock
	}
	rs, dsn := newReplicas(t, 1, cfg)
	b := rs[0]
	var ad *snapFake
	a, stopA := addReplica(t, b, dsn, cfg, func(d *fakeDriver) model.Driver { ad = &snapFake{fakeDriver: d}; return ad })
	sb := a.create(a.KeyA, api.CreateSandboxRequest{})
	entered, release := holdCopies(ad, sb.ID)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	snapped := snapshotAsync(a, sb.ID)
	waitClosed(t, entered, "the first server's copy")
	pending, err := b.Store.SnapshotsWithStatus(t.Context(), api.SnapshotPending)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending snapshots = %v, %v; want the copy's", pending, err)
	}
	id := pending[0].ID

	// The first server dies: its heartbeat is renewed no more, and ends.
	stopA()
	a.clock.Advance(31 * time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		sn, err := b.Store.Snapshot(t.Context(), a.AcctA.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if sn.Status == api.SnapshotFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead server's snapshot is %s 30 s after its heartbeat ended, want failed", sn.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	got := <-snapped
	var env api.ErrorEnvelope
	mustUnmarshal(t, got.body, &env)
	const want = "the snapshot was marked failed while it was taken: another server took it for one a crash interrupted (this server's heartbeat in the database had lapsed)"
	if got.code != http.StatusConflict || env.Error == nil || env.Error.Code != api.CodeConflict || env.Error.Message != want || env.Error.Hint == "" {
		t.Errorf("the dead server's copy, ended: %d %s, want 409 conflict %q with a hint", got.code, got.body, want)
	}
}

// TestServeEndsHeartbeat: a server's heartbeat is alive from Init and
// removed when Serve ends (a clean shutdown), so the servers that remain
// fail its pending snapshots at their next sweep, not 30 s later.
func TestServeEndsHeartbeat(t *testing.T) {
	rs, dsn := newReplicas(t, 1, server.Config{})
	st, err := sqlstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := server.New(server.Config{DriverName: "fake"}, st, &fakeDriver{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	live := func() int {
		t.Helper()
		ids, err := rs[0].Store.LiveInstances(t.Context(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	if n := live(); n != 2 {
		t.Fatalf("live servers after the second's Init: %d, want 2", n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if n := live(); n != 1 {
		t.Errorf("live servers after the second's Serve ended: %d, want 1", n)
	}
}
