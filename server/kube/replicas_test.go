package kube_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestDeleteFinishedByStartingReplica is server's test of the same name on
// the kube driver: two control planes on one Postgres database and one
// namespace; the second starts while the first deletes a sandbox (after
// the pod's teardown, before the row is written) and finishes that removal
// itself. The first's DELETE still answers 204, the pod is gone, and a
// second DELETE on either control plane is the reference's 404.
//
// The second's removal waits for the lifecycle lease the first holds
// while it waits for that start: the test ends the lease in the database
// when the wait begins, as its 30 s running out would (the removal's
// wait, a minute, made the test take 90 s).
func TestDeleteFinishedByStartingReplica(t *testing.T) {
	dsn, db := postgresDB(t)
	var (
		fired   atomic.Bool
		ended   atomic.Bool
		starter atomic.Pointer[server.Server]
		initErr = make(chan error, 1)
	)
	a := newEnv(t, kube.Config{})
	a.dsn = dsn
	b := &env{cluster: a.cluster, ns: a.ns, kubelet: a.kubelet, dsn: dsn, key: a.key, cfg: a.cfg}
	b.srvCfg.LockWaitForTests = func(id string) {
		// The second waits for the first's lease: it runs out.
		if fired.Load() && ended.CompareAndSwap(false, true) {
			if _, err := db.ExecContext(context.Background(), `UPDATE sandboxes SET lifecycle_until = 0 WHERE id = $1`, id); err != nil {
				t.Errorf("end the first control plane's lease: %v", err)
			}
		}
	}
	a.srvCfg.AfterTeardownForTests = func(string) {
		// The first teardown (the DELETE's, on the first control plane):
		// the second starts at this instant, before the row is written.
		if srv := starter.Load(); srv != nil && fired.CompareAndSwap(false, true) {
			initErr <- srv.Init(context.Background())
		}
	}
	a.start(t)
	ctx := context.Background()
	sb, err := a.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cp := b.open(t)
	t.Cleanup(func() {
		if b.stop == nil { // not served: the test ended before
			cp.d.Release()
			cp.st.Close()
		}
	})
	starter.Store(cp.srv)

	err = a.client().DeleteSandbox(ctx, sb.ID)
	if !fired.Load() {
		t.Fatal("the second control plane did not start during the delete")
	}
	if !ended.Load() {
		t.Error("the second control plane's start did not wait for the first's lease")
	}
	if ierr := <-initErr; ierr != nil {
		t.Fatalf("the second control plane's start: %v", ierr)
	}
	if err != nil {
		t.Errorf("DELETE while another control plane finished it: %v, want 204", err)
	}
	got, err := a.st.SandboxByID(ctx, sb.ID)
	if err != nil || got.Status != api.StatusDestroyed || got.DestroyReason != "deleted" {
		t.Fatalf("after the delete: %+v, %v; want destroyed (deleted)", got, err)
	}
	pods, err := a.cluster.Client.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + sb.ID})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods of the deleted sandbox: %d, %v; want none", len(pods.Items), err)
	}

	// A second delete, on either control plane, is the reference's 404.
	b.serve(t, cp)
	for name, c := range map[string]*client.Client{"first": a.client(), "second": b.client()} {
		var ae *api.Error
		if err := c.DeleteSandbox(ctx, sb.ID); !errors.As(err, &ae) || ae.Status != 404 {
			t.Errorf("second DELETE on the %s control plane: %v, want 404", name, err)
		}
	}
}

// TestReplicasWithoutSharedState: two control planes on one database, each
// with a state directory of its own (the chart's default with Postgres and
// no stateVolume claim). A snapshot or a paused workspace the first keeps
// cannot be restored or resumed through the second: that is 503
// service_unavailable saying why, not 502 "retry", and starts no pod; the
// first then resumes the sandbox with its files.
func TestReplicasWithoutSharedState(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set")
	}
	a := newEnv(t, kube.Config{SnapshotDir: t.TempDir()})
	a.dsn = dsn
	a.start(t)
	cfgB := a.cfg
	cfgB.SnapshotDir = t.TempDir()
	b := a.replica(cfgB)
	b.start(t)
	ctx := context.Background()
	ca, cb := a.client(), b.client()
	sb, err := ca.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Exec(ctx, sb.ID, api.ExecRequest{Command: "echo kept > kept.txt"}); err != nil {
		t.Fatal(err)
	}
	snap, err := ca.CreateSnapshot(ctx, sb.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := func(what string, err error) {
		t.Helper()
		ae, ok := errors.AsType[*api.Error](err)
		if !ok || ae.Status != http.StatusServiceUnavailable || ae.Code != api.CodeServiceUnavailable ||
			!strings.Contains(ae.Message, "state directory") || !strings.Contains(ae.Hint, "ReadWriteMany") {
			t.Errorf("%s through the other replica: %#v, want 503 service_unavailable naming the state directory", what, err)
		}
	}
	_, err = cb.RestoreSnapshot(ctx, snap.ID, "")
	elsewhere("restore", err)
	if _, err := ca.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
		t.Fatal(err)
	}
	_, err = cb.ResumeSandbox(ctx, sb.ID)
	elsewhere("resume", err)
	_, err = cb.CreateSnapshot(ctx, sb.ID, "")
	elsewhere("snapshot of the paused sandbox", err)
	_, err = cb.ForkSandbox(ctx, sb.ID, 1)
	elsewhere("fork of the paused sandbox", err)
	pods, err := a.cluster.Client.CoreV1().Pods(a.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods after the refusals: %d, %v; want none", len(pods.Items), err)
	}
	if _, err := ca.ResumeSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("resume through the replica that paused it: %v", err)
	}
	if out, err := cb.Exec(ctx, sb.ID, api.ExecRequest{Command: "cat kept.txt"}); err != nil || out.Stdout != "kept\n" {
		t.Errorf("files after the resume: %+v, %v", out, err)
	}
}

// TestReplicaResumeOrder is server's TestReplicaLifecycleOrder ("resume
// during a resume", "delete during a resume") on the kube driver, with
// real pods: two control planes on one Postgres database, one namespace
// and one state directory (the chart's ReadWriteMany stateVolume). A
// sandbox the first creates runs commands and reports its use through
// the second. The first then resumes it, paused, and the kubelet leaves
// the new pod pending while the second resumes or deletes it: that
// waits for the resume's lifecycle lease (server/sandbox/lease.go); the
// first resume, once the pod runs, answers 200. A second resume then
// answers 200 too, starting no pod of its own, and the sandbox runs
// commands through either server with its files back; a delete answers
// 204 and removes the pod, its Secret and NetworkPolicy and the
// workspace copy. Without the lease the delete removed the pod the
// resume waited for (the resume failed: "could not resume the sandbox").
func TestReplicaResumeOrder(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set")
	}
	for _, second := range []string{"resume", "delete"} {
		t.Run(second+" during a resume", func(t *testing.T) {
			testReplicaResumeOrder(t, dsn, second)
		})
	}
}

func testReplicaResumeOrder(t *testing.T, dsn, second string) {
	state := t.TempDir()
	a := newEnv(t, kube.Config{SnapshotDir: state})
	a.dsn = dsn
	a.start(t)
	waited := make(chan struct{}, 1) // the second server waits for a lease
	b := a.replica(a.cfg)
	b.srvCfg.LockWaitForTests = func(string) { notify(waited) }
	b.start(t)
	ctx := context.Background()
	ca, cb := a.client(), b.client()
	sb := createThrough(t, ca, cb, "echo through-b > b.txt")
	if got := mustExec(t, ca, sb.ID, "cat b.txt"); got != "through-b\n" {
		t.Errorf("a file written through the second server, read through the first: %q", got)
	}
	if st, err := cb.SandboxStats(ctx, sb.ID); err != nil || st.MemoryBytes <= 0 {
		t.Errorf("stats through the second server: %+v, %v; want the memory held", st, err)
	}
	if _, err := ca.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
		t.Fatal(err)
	}
	started := a.kubelet.Started()

	release := a.kubelet.Hold()
	defer release()
	resumed := make(chan error, 1)
	go func() {
		_, err := ca.ResumeSandbox(ctx, sb.ID)
		resumed <- err
	}()
	sel := metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + sb.ID}
	waitFor(t, "the resume's pod", func() bool {
		pods, err := a.cluster.Client.CoreV1().Pods(a.ns).List(ctx, sel)
		return err == nil && len(pods.Items) == 1
	})
	answered := make(chan error, 1)
	go func() {
		if second == "delete" {
			answered <- cb.DeleteSandbox(ctx, sb.ID)
			return
		}
		_, err := cb.ResumeSandbox(ctx, sb.ID)
		answered <- err
	}()
	select {
	case <-waited:
	case err := <-answered:
		release()
		t.Fatalf("the second server's %s answered (%v) during the first's resume, without waiting for it; the resume: %v", second, err, <-resumed)
	case <-time.After(time.Minute):
		t.Fatalf("the second server's %s neither waited nor answered within a minute", second)
	}
	release()
	if err := <-resumed; err != nil {
		t.Errorf("the first server's resume: %v, want it done before the %s", err, second)
	}
	if err := <-answered; err != nil {
		t.Errorf("the second server's %s: %v, want it done after the resume", second, err)
	}
	if second == "resume" {
		if n := a.kubelet.Started() - started; n != 1 {
			t.Errorf("%d pods started by the two resumes, want 1", n)
		}
		for name, c := range map[string]*client.Client{"first": ca, "second": cb} {
			if got := mustExec(t, c, sb.ID, "cat b.txt"); got != "through-b\n" {
				t.Errorf("the file after both resumes, through the %s server: %q", name, got)
			}
		}
		if got, err := a.st.SandboxByID(ctx, sb.ID); err != nil || got.Status != api.StatusActive {
			t.Errorf("the sandbox after both: %+v, %v; want active", got, err)
		}
		return
	}
	checkDeleted(t, a, sb.ID, state)
}

// checkDeleted fails t unless sandbox id is destroyed (deleted) in e's
// store and nothing of it is left: no pod, Secret or NetworkPolicy, no
// volume claim in the namespace, no workspace copy in state.
func checkDeleted(t *testing.T, e *env, id, state string) {
	t.Helper()
	ctx := context.Background()
	if got, err := e.st.SandboxByID(ctx, id); err != nil || got.Status != api.StatusDestroyed || got.DestroyReason != "deleted" {
		t.Errorf("the sandbox after both: %+v, %v; want destroyed (deleted)", got, err)
	}
	cs := e.cluster.Client
	sel := metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + id}
	if pods, err := cs.CoreV1().Pods(e.ns).List(ctx, sel); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods of the deleted sandbox: %d, %v; want none", len(pods.Items), err)
	}
	if secs, err := cs.CoreV1().Secrets(e.ns).List(ctx, sel); err != nil || len(secs.Items) != 0 {
		t.Errorf("secrets of the deleted sandbox: %d, %v; want none", len(secs.Items), err)
	}
	if nps, err := cs.NetworkingV1().NetworkPolicies(e.ns).List(ctx, sel); err != nil || len(nps.Items) != 0 {
		t.Errorf("network policies of the deleted sandbox: %d, %v; want none", len(nps.Items), err)
	}
	if pvcs, err := cs.CoreV1().PersistentVolumeClaims(e.ns).List(ctx, metav1.ListOptions{}); err != nil || len(pvcs.Items) != 0 {
		t.Errorf("volume claims in the namespace: %d, %v; want none", len(pvcs.Items), err)
	}
	if left, err := os.ReadDir(state); err != nil || len(left) != 0 {
		t.Errorf("the state directory after the delete: %v, %v; want no workspace copy", left, err)
	}
}

// postgresDB is a new Postgres database for t (servertest.PostgresDSN),
// and a handle on it closed when t ends; without one t is skipped
// (outside CI: PostgresDSN fails t in CI).
func postgresDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set")
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dsn, db
}

// replica is another control plane of e's, on its cluster, namespace,
// kubelet and database, its driver configured cfg; not started.
func (e *env) replica(cfg kube.Config) *env {
	return &env{cluster: e.cluster, ns: e.ns, kubelet: e.kubelet, dsn: e.dsn, key: e.key, cfg: cfg}
}

// createThrough creates a sandbox through ca and runs cmd in it through cb.
func createThrough(t *testing.T, ca, cb *client.Client, cmd string) *api.Sandbox {
	t.Helper()
	sb, err := ca.CreateSandbox(context.Background(), api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, cb, sb.ID, cmd)
	return sb
}

// notify sends on c unless a send is pending already.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// TestReplicaPauseDelete is server's TestReplicaLifecycleOrder ("delete
// during a pause") on the kube driver, in both orders, with real pods:
// two control planes on one Postgres database, one namespace and one
// state directory. A sandbox the first creates holds a file.
//
// "delete during a pause": the first pauses it and is held in its driver
// (kube.Config.PauseCopiedForTests) once the workspace is copied out,
// before the pod is marked paused and deleted; the second's DELETE waits
// for the pause's lifecycle lease, and then both answer as asked (200,
// 204). Without the lease the delete removed the pod and its Secret under
// the pause, which then failed (502 "could not pause the sandbox") and
// the sandbox was left paused, or its copy left behind.
//
// "pause during a delete": the second deletes it and is held after the
// driver's teardown, before the row is written; the first's pause waits
// for the delete's lease and then answers 409 conflict (the sandbox is
// destroyed) with a hint, having paused nothing.
//
// Either way the sandbox ends destroyed in the store, no pod, Secret,
// NetworkPolicy, claim or workspace copy of it is left, and a second
// DELETE on either server is 404.
func TestReplicaPauseDelete(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set")
	}
	for _, first := range []string{"pause", "delete"} {
		name := "delete during a pause"
		if first == "delete" {
			name = "pause during a delete"
		}
		t.Run(name, func(t *testing.T) { testReplicaPauseDelete(t, dsn, first) })
	}
}

func testReplicaPauseDelete(t *testing.T, dsn, first string) {
	state := t.TempDir()
	var (
		copied  = make(chan struct{}, 1) // the first server's pause copied the workspace
		held    = make(chan struct{})    // closed: the held change goes on
		torn    = make(chan struct{}, 1) // the second server's delete tore the sandbox down
		waited  = make(chan struct{}, 1) // the other server waits for the held one's lease
		release = sync.OnceFunc(func() { close(held) })
	)
	defer release()
	cfgA := kube.Config{SnapshotDir: state, PauseCopiedForTests: func(string) {
		if first == "delete" {
			t.Error("the first server's driver paused a sandbox the second was deleting")
			return
		}
		notify(copied)
		<-held
	}}
	a := newEnv(t, cfgA)
	a.dsn = dsn
	a.srvCfg.LockWaitForTests = func(string) { notify(waited) }
	a.start(t)
	cfgB := a.cfg
	cfgB.PauseCopiedForTests = nil
	b := a.replica(cfgB)
	b.srvCfg.LockWaitForTests = func(string) { notify(waited) }
	b.srvCfg.AfterTeardownForTests = func(string) {
		if first == "delete" {
			notify(torn)
			<-held
		}
	}
	b.start(t)
	ctx := context.Background()
	ca, cb := a.client(), b.client()
	sb := createThrough(t, ca, cb, "echo kept > kept.txt")
	started := a.kubelet.Started()

	pause := func() error {
		_, err := ca.PauseSandbox(ctx, sb.ID, api.PauseFilesystem)
		return err
	}
	del := func() error { return cb.DeleteSandbox(ctx, sb.ID) }
	// The held change first, then the other once it is held.
	heldDo, heldAt, otherDo := pause, copied, del
	if first == "delete" {
		heldDo, heldAt, otherDo = del, torn, pause
	}
	heldErr, otherErr := make(chan error, 1), make(chan error, 1)
	go func() { heldErr <- heldDo() }()
	select {
	case <-heldAt:
	case err := <-heldErr:
		t.Fatalf("the %s answered (%v) before it was held", first, err)
	case <-time.After(time.Minute):
		t.Fatalf("the %s was not held within a minute", first)
	}
	go func() { otherErr <- otherDo() }()
	select {
	case <-waited:
	case err := <-otherErr:
		release()
		t.Fatalf("the other server answered (%v) during the held %s, without waiting for it; the %s: %v", err, first, first, <-heldErr)
	case <-time.After(time.Minute):
		t.Fatalf("the other server neither waited nor answered within a minute")
	}
	release()
	pauseErr, delErr := <-heldErr, <-otherErr
	if first == "delete" {
		pauseErr, delErr = delErr, pauseErr
	}
	if delErr != nil {
		t.Errorf("the second server's delete: %v, want 204", delErr)
	}
	if first == "pause" {
		if pauseErr != nil {
			t.Errorf("the first server's pause: %v, want 200 before the delete", pauseErr)
		}
	} else {
		ae, ok := errors.AsType[*api.Error](pauseErr)
		if !ok || ae.Status != http.StatusConflict || ae.Code != api.CodeConflict || ae.Hint == "" {
			t.Errorf("the first server's pause after the delete: %#v, want 409 conflict with a hint", pauseErr)
		}
	}

	if n := a.kubelet.Started() - started; n != 0 {
		t.Errorf("%d pods started by the pause and the delete, want none", n)
	}
	checkDeleted(t, a, sb.ID, state)
	for name, c := range map[string]*client.Client{"first": ca, "second": cb} {
		if err := c.DeleteSandbox(ctx, sb.ID); !isStatus(err, http.StatusNotFound) {
			t.Errorf("a second DELETE on the %s server: %v, want 404", name, err)
		}
	}
}

// isStatus reports whether err is an API answer of status code.
func isStatus(err error, code int) bool {
	ae, ok := errors.AsType[*api.Error](err)
	return ok && ae.Status == code
}

// TestSnapshotOfLapsedControlPlane: a control plane on Postgres whose
// heartbeat lease lapsed (its renewal held by a hook, the lease's end
// written in the database, as 30 s of a stalled database would) completes
// no snapshot it takes: its finishing write is fenced by the lease's
// token. The take answers 409 conflict, the row is failed and holds no
// key, and the copy's file in the snapshot directory is deleted. Once
// its heartbeat is renewed (under a new token) a snapshot completes.
func TestSnapshotOfLapsedControlPlane(t *testing.T) {
	dsn, db := postgresDB(t)
	dir := t.TempDir()
	var held atomic.Pointer[chan struct{}]
	waiting := make(chan struct{}, 1)
	e := newEnv(t, kube.Config{SnapshotDir: dir})
	e.dsn = dsn
	e.srvCfg.HeartbeatForTests = func() {
		if ch := held.Load(); ch != nil {
			select {
			case waiting <- struct{}{}:
			default:
			}
			<-*ch
		}
	}
	e.start(t)
	c := e.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}

	// The next renewal stalls; then the lease ends.
	beats := make(chan struct{})
	held.Store(&beats)
	releaseBeats := sync.OnceFunc(func() { close(beats) })
	defer releaseBeats()
	select {
	case <-waiting:
	case <-time.After(time.Minute):
		t.Fatal("the heartbeat was not renewed within a minute")
	}
	if _, err := db.ExecContext(ctx, `UPDATE server_instances SET alive_until = 0`); err != nil {
		t.Fatal(err)
	}

	_, err = c.CreateSnapshot(ctx, sb.ID, "lapsed")
	const want = "the snapshot was marked failed while it was taken: this server's heartbeat in the database had lapsed, so it may not complete it (another server may have taken it for one a crash interrupted)"
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != http.StatusConflict || ae.Code != api.CodeConflict || ae.Message != want || ae.Hint == "" {
		t.Fatalf("snapshot through a control plane whose lease lapsed: %v, want 409 conflict %q with a hint", err, want)
	}
	failed, err := e.st.SnapshotsWithStatus(ctx, api.SnapshotFailed)
	if err != nil || len(failed) != 1 || failed[0].Key != "" || failed[0].OwnerToken == 0 {
		t.Fatalf("failed snapshots = %+v, %v; want the lapsed one, under a token, holding no key", failed, err)
	}
	if left, err := filepath.Glob(filepath.Join(dir, "*")); err != nil || len(left) != 0 {
		t.Errorf("snapshot directory after the fenced take: %v, %v; want its copy deleted", left, err)
	}

	// Renewed, under a new token: snapshots complete again.
	releaseBeats()
	deadline := time.Now().Add(time.Minute)
	for renewed := false; !renewed; {
		live, err := e.st.LiveInstances(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, token := range live {
			renewed = renewed || token > failed[0].OwnerToken
		}
		if !renewed && time.Now().After(deadline) {
			t.Fatalf("live heartbeats %v a minute after the renewal was released, want one past token %d", live, failed[0].OwnerToken)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if snap, err := c.CreateSnapshot(ctx, sb.ID, "renewed"); err != nil || snap.Status != api.SnapshotCompleted {
		t.Errorf("snapshot after the renewal: %+v, %v; want completed", snap, err)
	}
}

// TestSnapshotLeftoversSwept is server's TestReplicaLeftoversSwept on the
// kube driver, with real pods and the snapshot directory the two control
// planes share: the first's take of a sandbox is held once it claimed its
// key (kube.Config.SnapshotClaimedForTests), the snapshot is deleted
// through the second, and the first dies (its database handle closed, as
// its process's would be) as its copy's tar lands in the directory: the
// take never records, and nothing names the tar. The second's sweep
// deletes it once it has been unheld for a take's longest run (its clock
// moved on), and leaves the tar of a completed snapshot and the take it
// has in flight itself, which completes. Before, the tar stayed. So did
// the partial- copy a replica that dies mid-copy leaves (session 27): the
// sweep deletes that too, and not the live take's, which holds its own
// (partial.go) across the sweeps while its take is held at its claim.
func TestSnapshotLeftoversSwept(t *testing.T) {
	dsn, _ := postgresDB(t)
	dir := t.TempDir()
	ctx := context.Background()
	var (
		held    atomic.Pointer[string] // the sandbox whose take is held at its claim
		claimed = make(chan struct{}, 1)
		goOn    = make(chan struct{}, 1)
	)
	hold := func(id string) {
		if p := held.Load(); p != nil && *p == id {
			notify(claimed)
			<-goOn
		}
	}
	a := newEnv(t, kube.Config{SnapshotDir: dir, SnapshotClaimedForTests: hold})
	a.dsn = dsn
	a.start(t)
	b := a.replica(a.cfg)
	var ahead atomic.Int64 // how far the second's clock runs ahead
	b.srvCfg.ClockForTests = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	b.srvCfg.ReaperInterval = 20 * time.Millisecond // how often Run looks at its heartbeat's clock
	b.start(t)
	t.Cleanup(func() { close(goOn) }) // before the servers close: they wait for the takes
	ca, cb := a.client(), b.client()
	long := api.CreateSandboxRequest{LifetimeMinutes: 24 * 60}
	create := func(c *client.Client, file string) *api.Sandbox {
		t.Helper()
		sb, err := c.CreateSandbox(ctx, long)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, sb.ID, "echo "+file+" > "+file)
		return sb
	}
	kept := create(cb, "kept.txt")
	if _, err := cb.CreateSnapshot(ctx, kept.ID, "kept"); err != nil {
		t.Fatal(err)
	}
	completed, err := b.st.SnapshotsWithStatus(ctx, api.SnapshotCompleted)
	if err != nil || len(completed) != 1 {
		t.Fatalf("completed snapshots = %+v, %v; want the kept one", completed, err)
	}
	keptTar := filepath.Join(dir, completed[0].Key+".tar")

	// The first's take, held at its claim; the snapshot deleted; the
	// first dies as its copy lands.
	// takeHeld takes a snapshot of sb through c, held at its claim;
	// its answer comes on the channel once let go on.
	takeHeld := func(c *client.Client, sb *api.Sandbox, who string) <-chan error {
		t.Helper()
		held.Store(&sb.ID)
		answered := make(chan error, 1)
		go func() {
			_, err := c.CreateSnapshot(ctx, sb.ID, who)
			answered <- err
		}()
		select {
		case <-claimed:
		case err := <-answered:
			t.Fatalf("the %s control plane's take answered (%v) before its claim", who, err)
		case <-time.After(time.Minute):
			t.Fatalf("the %s control plane's take did not claim its key within a minute", who)
		}
		return answered
	}
	answered := takeHeld(ca, create(ca, "lost.txt"), "first")
	pending, err := b.st.SnapshotsWithStatus(ctx, api.SnapshotPending)
	if err != nil || len(pending) != 1 || pending[0].Key == "" {
		t.Fatalf("pending snapshots = %+v, %v; want the held take's, its key claimed", pending, err)
	}
	if err := cb.DeleteSnapshot(ctx, pending[0].ID); err != nil {
		t.Fatalf("DELETE of the pending snapshot through the second: %v", err)
	}
	a.st.Close() // the first dies: its database goes with it
	goOn <- struct{}{}
	if err := <-answered; err == nil {
		t.Fatal("the dying control plane's take answered 201")
	}
	a.stop()
	lostTar := filepath.Join(dir, pending[0].Key+".tar")
	if _, err := os.Stat(lostTar); err != nil {
		t.Fatalf("the dead control plane's copy left no tar (%v): the test reproduces nothing", err)
	}
	// And a copy it was writing when it died: a partial file no copy
	// holds (its lock went with its process; this one's process lives on,
	// so the file is made as it would be left).
	lostPartial := filepath.Join(dir, "partial-dead-replica")
	if err := os.WriteFile(lostPartial, []byte("half a tar"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The second's own take, in flight (held at its claim) across the
	// sweeps.
	liveDone := takeHeld(cb, create(cb, "live.txt"), "second")

	// The second's clock moves 20 s at a time, within its heartbeat's
	// lease (30 s: a longer jump lapses it, and its take fails), each
	// step once it renewed its heartbeat at the clock's time (a sweep
	// follows each renewal; the first's heartbeat, on the real clock,
	// has ended by then): the first look, a take's longest run (5 min)
	// on, a sweep's minute between looks, the renewals' lag.
	gone := func() bool {
		_, err := os.Stat(lostTar)
		_, perr := os.Stat(lostPartial)
		return errors.Is(err, os.ErrNotExist) && errors.Is(perr, os.ErrNotExist)
	}
	left := b.srvCfg.ClockForTests()
	for i := 0; i < 27 && !gone(); i++ {
		ahead.Add(int64(20 * time.Second))
		deadline := time.Now().Add(time.Minute)
		for {
			live, err := b.st.LiveInstances(ctx, b.srvCfg.ClockForTests().Add(25*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if len(live) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the second control plane renewed no heartbeat within a minute")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !gone() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !gone() {
		t.Fatalf("the dead control plane's tar %s or partial copy %s stays", lostTar, lostPartial)
	}
	if after := b.srvCfg.ClockForTests().Sub(left); after < 5*time.Minute {
		t.Errorf("the dead control plane's tar was deleted %v after it died, before a take's longest run", after)
	}
	if _, err := os.Stat(keptTar); err != nil {
		t.Errorf("the completed snapshot's tar: %v", err)
	}
	goOn <- struct{}{}
	if err := <-liveDone; err != nil {
		t.Fatalf("the second control plane's take across the sweeps: %v", err)
	}
	if left, err := filepath.Glob(filepath.Join(dir, "sha256-*.tar")); err != nil || len(left) != 2 {
		t.Errorf("the snapshot directory holds %v, %v; want the kept snapshot's tar and the live one's", left, err)
	}
	if left, err := filepath.Glob(filepath.Join(dir, "partial-*")); err != nil || len(left) != 0 {
		t.Errorf("partial copies left: %v, %v; want none", left, err)
	}
}
