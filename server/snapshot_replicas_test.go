package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
	"github.com/boxkite/boxkite/server/storagesync"
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
	waitSnapshot(t, b, id, "failed 30 s after its heartbeat ended", func(sn *model.Snapshot) bool { return sn.Status == api.SnapshotFailed })
	close(release)
	wantConflict(t, <-snapped, failedMeanwhile, "the dead server's copy, ended")
}

// failedMeanwhile is the message of a snapshot another server failed
// while it was taken (docs/snapshots.md).
const failedMeanwhile = "the snapshot was marked failed while it was taken: this server's heartbeat in the database had lapsed, so it may not complete it (another server may have taken it for one a crash interrupted)"

// wantConflict fails t unless got is 409 conflict with message want and
// a hint.
func wantConflict(t *testing.T, got answer, want, what string) {
	t.Helper()
	var refusal api.ErrorEnvelope
	mustUnmarshal(t, got.body, &refusal)
	if got.code != http.StatusConflict || refusal.Error == nil || refusal.Error.Code != api.CodeConflict || refusal.Error.Message != want || refusal.Error.Hint == "" {
		t.Errorf("%s: %d %s, want 409 conflict %q with a hint", what, got.code, got.body, want)
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

// holdAfterClaim makes d's first copy of sandbox id block, once it
// claimed its key (the data under it is the copy's), until release is
// closed; entered is closed when it began to wait.
func holdAfterClaim(d *snapFake, id string) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	d.mu.Lock()
	defer d.mu.Unlock()
	d.AfterClaim = func(sid string) {
		if sid == id {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
	}
	return entered, release
}

// waitSnapshot polls e's store until snapshot id of e's first account
// satisfies ok, failing t after a hang guard.
func waitSnapshot(t *testing.T, e *env, id, what string, ok func(*model.Snapshot) bool) *model.Snapshot {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sn, err := e.Store.Snapshot(t.Context(), e.AcctA.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(sn) {
			return sn
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot %s is %+v after 30 s, want %s", id, sn, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicaLapsedOwnerFenced: a live server whose heartbeat cannot be
// renewed past its lease (held by a hook: a stalled database, a paused
// VM) has its pending snapshot failed by another server's sweep; when its
// copy then finishes, the row stays failed (its finishing write is fenced
// by its lease's token, and the row is no longer pending), the snapshot
// answers 409 once, no snapshot_created is audited, and the server lets
// go of the key it claimed and deletes the data it wrote under it. Once
// its heartbeat is renewed again (a new token) its snapshots complete.
func TestReplicaLapsedOwnerFenced(t *testing.T) {
	var held atomic.Pointer[chan struct{}]
	cfg := server.Config{
		RateLimits:     server.RateLimits{Lifecycle: 1000, Snapshot: 1000},
		ReaperInterval: 10 * time.Millisecond, // how often Run looks at its heartbeat's clock
	}
	rs, dsn := newReplicas(t, 1, cfg)
	b := rs[0]
	cfgA := cfg
	cfgA.HeartbeatForTests = func() {
		if ch := held.Load(); ch != nil {
			<-*ch
		}
	}
	var ad *snapFake
	a, _ := addReplica(t, b, dsn, cfgA, func(d *fakeDriver) model.Driver { ad = &snapFake{fakeDriver: d}; return ad })
	sb := a.create(a.KeyA, api.CreateSandboxRequest{})
	entered, release := holdAfterClaim(ad, sb.ID)
	releaseCopy := sync.OnceFunc(func() { close(release) })
	defer releaseCopy()
	snapped := snapshotAsync(a, sb.ID)
	waitClosed(t, entered, "the first server's copy")
	pending, err := b.Store.SnapshotsWithStatus(t.Context(), api.SnapshotPending)
	if err != nil || len(pending) != 1 || pending[0].Key != "key-"+sb.ID || pending[0].OwnerToken == 0 {
		t.Fatalf("pending snapshots = %+v, %v; want the copy's, its key claimed, under a token", pending, err)
	}
	id, token := pending[0].ID, pending[0].OwnerToken

	// The first server's heartbeat stalls past its lease; the second
	// takes it for dead and fails its snapshot.
	beats := make(chan struct{})
	held.Store(&beats)
	releaseBeats := sync.OnceFunc(func() { close(beats) })
	defer releaseBeats()
	a.clock.Advance(31 * time.Second)
	waitSnapshot(t, b, id, "failed", func(sn *model.Snapshot) bool { return sn.Status == api.SnapshotFailed })

	// The first server's copy ends.
	releaseCopy()
	wantConflict(t, <-snapped, failedMeanwhile, "the lapsed server's copy, ended")
	sn, err := b.Store.Snapshot(t.Context(), b.AcctA.ID, id)
	if err != nil || sn.Status != api.SnapshotFailed || sn.Key != "" {
		t.Errorf("the snapshot after its copy ended: %+v, %v; want failed, holding no key", sn, err)
	}
	if del := ad.Deleted(); !slices.Equal(del, []string{"key-" + sb.ID}) {
		t.Errorf("the lapsed server deleted the data under %v, want [key-%s] (what its copy wrote)", del, sb.ID)
	}
	entries, _, err := a.Store.ExecLog(t.Context(), sb.ID, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Operation == "snapshot_created" {
			t.Errorf("audited %+v for a snapshot that failed", e)
		}
	}

	// Its heartbeat renewed again, under a new token, it takes snapshots.
	releaseBeats()
	deadline := time.Now().Add(30 * time.Second)
	for {
		live, err := b.Store.LiveInstances(t.Context(), a.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if live[a.Server.Instance()] > token {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live servers %v 30 s after the heartbeat was released, want the first under a token past %d", live, token)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := <-snapshotAsync(a, sb.ID); got.code != http.StatusCreated {
		t.Errorf("a snapshot after the heartbeat was renewed: %d %s, want 201", got.code, got.body)
	}
}

// TestReplicaSnapshotDeletedWhileTaken: a pending snapshot deleted
// through another server while its copy runs, before or after the copy
// claimed its key: the delete wins. The take answers 409 conflict
// "snapshot ID was deleted while it was taken" with a hint (it answered
// 502 "could not take the snapshot" when the delete came before the
// claim, and 201 with a deleted snapshot after it), the snapshot stays
// deleted (404), and the taking server deletes the data its copy wrote.
func TestReplicaSnapshotDeletedWhileTaken(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(*snapFake, string) (chan struct{}, chan struct{})
		// wrote: the copy claimed the key (and wrote under it) first.
		wrote bool
	}{
		{"before its claim", holdCopies, false},
		{"after its claim", holdAfterClaim, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.Config{RateLimits: server.RateLimits{Lifecycle: 1000, Snapshot: 1000}}
			rs, ds, _ := snapReplicas(t, 2, cfg)
			a, b := rs[0], rs[1]
			sb := a.create(a.KeyA, api.CreateSandboxRequest{})
			entered, release := tc.hold(ds[0], sb.ID)
			releaseCopy := sync.OnceFunc(func() { close(release) })
			defer releaseCopy()
			snapped := snapshotAsync(a, sb.ID)
			waitClosed(t, entered, "the copy")

			resp, body := b.do("GET", sandboxPath(sb.ID, "/snapshots"), b.KeyA, nil)
			var list []api.Snapshot
			mustUnmarshal(t, body, &list)
			if resp.StatusCode != http.StatusOK || len(list) != 1 || list[0].Status != api.SnapshotPending {
				t.Fatalf("snapshots listed during the copy: %d %s, want the pending one", resp.StatusCode, body)
			}
			id := list[0].ID
			if resp, body := b.do("DELETE", "/v1/snapshots/"+id, b.KeyA, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE of the pending snapshot: %d %s, want 204", resp.StatusCode, body)
			}
			releaseCopy()
			wantConflict(t, <-snapped, "snapshot "+id+" was deleted while it was taken", "the take of a snapshot deleted meanwhile")
			for name, e := range map[string]*env{"first": a, "second": b} {
				if resp, body := e.do("GET", "/v1/snapshots/"+id, e.KeyA, nil); resp.StatusCode != http.StatusNotFound {
					t.Errorf("GET of the deleted snapshot through the %s server: %d %s, want 404", name, resp.StatusCode, body)
				}
			}
			var wantDeleted []string
			if tc.wrote {
				wantDeleted = []string{"key-" + sb.ID}
			}
			if del := ds[0].Deleted(); !slices.Equal(del, wantDeleted) {
				t.Errorf("the taking server deleted the data under %v, want %v", del, wantDeleted)
			}
		})
	}
}

// portingSnapFake is snapFake whose data goes to a bucket
// (model.SnapshotPorter): its Disk holds a key's name as its data.
type portingSnapFake struct{ *snapFake }

func (d *portingSnapFake) ExportSnapshot(_ context.Context, key string) (io.ReadCloser, int64, error) {
	if !d.Disk.Has(key) {
		return nil, 0, errors.New("no such snapshot")
	}
	return io.NopCloser(strings.NewReader(key)), int64(len(key)), nil
}

func (d *portingSnapFake) ImportSnapshot(_ context.Context, key string, _ io.Reader) error {
	d.Disk.put(key)
	return nil
}

func (d *portingSnapFake) HasSnapshot(_ context.Context, key string) (bool, error) {
	return d.Disk.Has(key), nil
}

// heldBucket is a bucket whose puts run afterPut, when set, once stored.
type heldBucket struct {
	storagesync.Backend
	afterPut atomic.Pointer[func(key string)]
}

func (b *heldBucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	err := b.Backend.Put(ctx, key, r, size)
	if f := b.afterPut.Load(); f != nil && err == nil {
		(*f)(key)
	}
	return err
}

// TestReplicaLeftoversSwept: a snapshot deleted through one server while
// another takes it, after the take claimed its key, and the taking server
// then dies once its copy wrote its data (and, with a bucket, put its
// object) but before it recorded the snapshot: nothing names that data
// or object any more (the delete's own drop came before the copy wrote
// it), and the taker's own cleanup (abandon) never runs. The surviving
// server's sweep deletes both once they have been unheld for a take's
// longest run (5 min; 35 with a bucket), while a take of its own in
// flight — its data written, its object put, not yet recorded — keeps
// both and completes. Before, the data and the object stayed for good
// (bench/issue27/session25-fence25.md, "Left").
func TestReplicaLeftoversSwept(t *testing.T) {
	for _, withBucket := range []bool{false, true} {
		name := "driver"
		if withBucket {
			name = "driver and bucket"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			disk := &fakeDisk{} // the replicas' shared snapshot directory
			cfg := server.Config{
				RateLimits:     server.RateLimits{Lifecycle: 1000, Snapshot: 1000},
				ReaperInterval: 10 * time.Millisecond, // how often Run looks at its heartbeat's clock
			}
			grace := 5 * time.Minute
			var bucket *heldBucket
			if withBucket {
				obj := objtest.Start(t, "s3")
				be, err := storagesync.Open(ctx, obj.Config)
				if err != nil {
					t.Fatal(err)
				}
				bucket = &heldBucket{Backend: be}
				cfg.Storage = server.StorageConfig{Backend: bucket, Prefix: "p"}
				grace = 35 * time.Minute
			}
			drivers := map[string]*snapFake{}
			wrap := func(name string) func(*fakeDriver) model.Driver {
				return func(d *fakeDriver) model.Driver {
					sd := &snapFake{fakeDriver: d, Disk: disk}
					drivers[name] = sd
					if withBucket {
						return &portingSnapFake{sd}
					}
					return sd
				}
			}
			rs, dsn := newReplicasWith(t, 1, cfg, wrap("survivor"))
			b := rs[0]
			a, stopA := addReplica(t, b, dsn, cfg, wrap("dying"))
			long := api.CreateSandboxRequest{LifetimeMinutes: 24 * 60}
			sbA, sbB := a.create(a.KeyA, long), b.create(b.KeyA, long)

			// The dying server's take: held once it claimed its key,
			// held for good ("dead") once it wrote (and put) its data.
			claimed, deleted := make(chan struct{}), make(chan struct{})
			dead, died := make(chan struct{}), make(chan struct{})
			live, liveWrote := make(chan struct{}), make(chan struct{})
			releaseLive := sync.OnceFunc(func() { close(live) })
			t.Cleanup(func() { close(dead); releaseLive() }) // before the servers close: they wait for the takes
			drivers["dying"].AfterClaim = func(id string) {
				if id == sbA.ID {
					close(claimed)
					<-deleted
				}
			}
			var aID atomic.Pointer[string] // the dying server's snapshot, once known
			hold := func(dying bool) {
				if dying {
					close(died)
					<-dead
					return
				}
				close(liveWrote)
				<-live
			}
			if withBucket {
				f := func(key string) {
					if strings.HasPrefix(key, "p/snapshots/") { // not the workspaces' sync
						hold(strings.Contains(key, "/"+*aID.Load()+"/"))
					}
				}
				bucket.afterPut.Store(&f)
			} else {
				written := func(id string) { hold(id == sbA.ID) }
				drivers["dying"].Written, drivers["survivor"].Written = written, written
			}
			snappedA := snapshotAsync(a, sbA.ID)
			waitClosed(t, claimed, "the dying server's claim")
			pending, err := b.Store.SnapshotsWithStatus(ctx, api.SnapshotPending)
			if err != nil || len(pending) != 1 {
				t.Fatalf("pending snapshots = %+v, %v; want the dying server's", pending, err)
			}
			id := pending[0].ID
			aID.Store(&id)
			key := "key-" + sbA.ID
			object := "p/snapshots/" + a.AcctA.ID + "/" + id + "/data"
			if resp, body := b.do("DELETE", "/v1/snapshots/"+id, b.KeyA, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE of the pending snapshot: %d %s, want 204", resp.StatusCode, body)
			}
			close(deleted)
			waitClosed(t, died, "the dying server's copy")
			stopA()
			select {
			case got := <-snappedA:
				t.Fatalf("the dead server's take answered %d %s", got.code, got.body)
			default:
			}
			if !disk.Has(key) {
				t.Fatalf("the dead server's copy left no data under %s: the test reproduces nothing", key)
			}
			if withBucket {
				if objs := bucketObjects(t, bucket, "p/snapshots/"); !objs[object] {
					t.Fatalf("the bucket holds %v, want the dead server's object %s", objs, object)
				}
			}

			// The survivor's own take, in flight across the sweeps.
			snappedB := snapshotAsync(b, sbB.ID)
			waitClosed(t, liveWrote, "the surviving server's copy")
			liveKey := "key-" + sbB.ID

			// The survivor's sweeps: the clock moves by 20 s at a time,
			// within its heartbeat's lease (30 s: a longer jump lapses
			// it, and its take fails), each step once the survivor
			// renewed its heartbeat at the clock's time (a sweep follows
			// each renewal).
			steps := func(d time.Duration, done func() bool) {
				t.Helper()
				for range d / (20 * time.Second) {
					if done() {
						return
					}
					b.clock.Advance(20 * time.Second)
					eventually(t, "the surviving server's renewal", func() bool {
						live, err := b.Store.LiveInstances(ctx, b.clock.Now().Add(25*time.Second))
						if err != nil {
							t.Fatal(err)
						}
						_, ok := live[b.Server.Instance()]
						return ok
					})
				}
			}
			gone := func() bool {
				return !disk.Has(key) && (!withBucket || !bucketObjects(t, bucket, "p/snapshots/")[object])
			}
			// The first look (at most a minute on), then a take's
			// longest run, a sweep's minute between looks, and the
			// renewals' own lag (a sweep may read the clock a step on).
			left := b.clock.Now()
			steps(time.Minute+grace+3*time.Minute, gone)
			if !gone() {
				eventually(t, "the dead server's data and object deleted", gone)
			}
			if after := b.clock.Now().Sub(left); after < grace {
				t.Errorf("the dead server's data and object were deleted %v after it died, before a take's longest run (%v)", after, grace)
			}

			if !disk.Has(liveKey) {
				t.Errorf("the sweep deleted the data of the take in flight, %s", liveKey)
			}
			releaseLive()
			got := <-snappedB
			if got.code != http.StatusCreated {
				t.Fatalf("the surviving server's take: %d %s, want 201\n%s", got.code, got.body, b.Logs.String())
			}
			var sn api.Snapshot
			mustUnmarshal(t, got.body, &sn)
			if withBucket {
				if objs := bucketObjects(t, bucket, "p/snapshots/"); !objs["p/snapshots/"+b.AcctA.ID+"/"+sn.ID+"/data"] {
					t.Errorf("the bucket holds %v, want the surviving take's object", objs)
				}
			}
			if resp, body := b.do("POST", "/v1/snapshots/"+sn.ID+"/restore", b.KeyA, api.RestoreSnapshotRequest{}); resp.StatusCode != http.StatusCreated {
				t.Errorf("restore of the snapshot taken across the sweeps: %d %s, want 201", resp.StatusCode, body)
			}
		})
	}
}

// bucketObjects lists the bucket's keys under prefix.
func bucketObjects(t *testing.T, b storagesync.Backend, prefix string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	if err := b.List(t.Context(), prefix, func(o storagesync.Object) error {
		got[o.Key] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}
