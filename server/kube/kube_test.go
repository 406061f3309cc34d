package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/cli"
	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/kubetest"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tests in this file run the driver against a real kube-apiserver
// (internal/kubetest, one per test binary) with the test kubelet running
// each pod's boxkite-sidecar on its own loopback address.

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// env is one namespace with its kubelet, and a control plane on the kube
// driver that can be restarted over the same database.
type env struct {
	cluster *kubetest.Cluster
	ns      string
	kubelet *kubetest.Kubelet
	dbPath  string
	dsn     string // the database when not the SQLite file at dbPath
	key     string
	cfg     kube.Config
	srvCfg  server.Config // the server's, but for the key and driver name
	console bool          // serve the web console at /ui/, as boxkite-server does
	// secrets, when set, makes the server's secrets service over its store.
	secrets func(st *sqlstore.Store) *secrets.Service

	driver *kube.Driver
	st     *sqlstore.Store // the running server's
	url    string
	stop   func()
}

func newEnv(t *testing.T, cfg kube.Config, node ...kubetest.KubeletOption) *env {
	t.Helper()
	c := kubetest.Shared(t)
	return newEnvOn(t, c, c.Namespace(t), cfg, node...)
}

// newEnvOn is newEnv on cluster c in namespace ns. node configures its
// kubelet.
func newEnvOn(t *testing.T, c *kubetest.Cluster, ns string, cfg kube.Config, node ...kubetest.KubeletOption) *env {
	t.Helper()
	cfg.Namespace = ns
	// A request handed over (a WebSocket) still logs once the env stopped.
	cfg.Log = slog.New(slog.NewTextHandler(servertest.LogWriter(t), nil))
	e := &env{
		cluster: c, ns: ns, kubelet: c.StartKubelet(t, ns, servertest.SidecarBinary(t), node...),
		dbPath: filepath.Join(t.TempDir(), "boxkite.db"), key: model.NewAPIKey(), cfg: cfg,
	}
	return e
}

// start serves a control plane on a new kube driver.
func (e *env) start(t *testing.T) {
	t.Helper()
	cp := e.open(t)
	if err := cp.srv.Init(context.Background()); err != nil {
		t.Fatalf("init: %v", err)
	}
	e.serve(t, cp)
}

// controlPlane is a server on its own kube driver and store, not serving yet.
type controlPlane struct {
	srv *server.Server
	d   *kube.Driver
	st  *sqlstore.Store
}

// open makes a control plane on a new kube driver over the env's database
// (its SQLite file, or dsn when set), without starting it (Init) or
// serving it.
func (e *env) open(t *testing.T) controlPlane {
	t.Helper()
	d, err := kube.New(e.cluster.Client, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	dsn := e.dsn
	if dsn == "" {
		dsn = "sqlite:" + e.dbPath
	}
	st, err := sqlstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	sc := e.srvCfg
	sc.BootstrapAPIKey, sc.DriverName = e.key, "kube"
	if e.secrets != nil {
		sc.Secrets = e.secrets(st)
	}
	srv, err := server.New(sc, st, d, e.cfg.Log)
	if err != nil {
		t.Fatal(err)
	}
	srv.MountE2B(e2b.New(srv.E2B(), st, e.cfg.Log), e2b.Matches) // as boxkite-server does
	if e.console {
		ui, err := console.New(console.Config{API: srv, Log: e.cfg.Log, LinkKey: srv.ConsoleLinkKey})
		if err != nil {
			t.Fatal(err)
		}
		srv.MountConsole(ui)
	}
	return controlPlane{srv: srv, d: d, st: st}
}

// serve serves cp, started, until the test ends or e.stop.
func (e *env) serve(t *testing.T, cp controlPlane) {
	t.Helper()
	hs := httptest.NewServer(cp.srv)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = cp.srv.Run(ctx) })
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			hs.CloseClientConnections()
			hs.Close()
			cancel()
			wg.Wait()
			cp.d.Release() // what the process dying would close
			cp.st.Close()
		})
	}
	t.Cleanup(e.stop)
	e.driver, e.st, e.url = cp.d, cp.st, hs.URL
}

// restart stops the control plane (leaving the pods) and starts a new one.
func (e *env) restart(t *testing.T) {
	t.Helper()
	e.stop()
	e.start(t)
}

func (e *env) client() *client.Client { return client.New(e.url, e.key) }

// mustExec runs cmd in sandbox id (60 s at most) and returns its stdout;
// it fails t unless the command ran and exited 0.
func mustExec(t *testing.T, c *client.Client, id, cmd string) string {
	t.Helper()
	res, err := c.Exec(context.Background(), id, api.ExecRequest{Command: cmd, Timeout: 60})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s in %s: %+v, %v", cmd, id, res, err)
	}
	return res.Stdout
}

// boxkite runs the CLI in this process against the env's server.
func (e *env) boxkite(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	app := cli.NewApp(cli.IO{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}, "test")
	code := cli.Execute(context.Background(), cli.NewRoot(app), args)
	if code != 0 {
		t.Fatalf("boxkite %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestCLI is acceptance 1 of issue 12: create, exec, files and destroy
// through the boxkite CLI against a server on the kube driver, with the
// pod, Secret and NetworkPolicy checked in the API server.
func TestCLI(t *testing.T) {
	testCLI(t, newEnv(t, kube.Config{}))
}

func testCLI(t *testing.T, e *env) {
	e.start(t)
	t.Setenv("BOXKITE_HOME", t.TempDir())
	t.Setenv("BOXKITE_URL", e.url)
	t.Setenv("BOXKITE_API_KEY", e.key)
	t.Setenv("NO_COLOR", "1")

	id := strings.TrimSpace(e.boxkite(t, "session", "create", "--label", "k"))
	if out := e.boxkite(t, "exec", "--", "echo hello from $(id -u)"); !strings.Contains(out, "hello from ") {
		t.Errorf("exec output = %q", out)
	}
	e.boxkite(t, "files", "create", "notes/a.txt", "--content", "hello kube")
	if out := e.boxkite(t, "files", "view", "notes/a.txt"); !strings.Contains(out, "hello kube") {
		t.Errorf("files view = %q, want the content", out)
	}
	if out := e.boxkite(t, "exec", "--", "cat notes/a.txt"); !strings.Contains(out, "hello kube") {
		t.Errorf("exec cat = %q, want the file written through the files API", out)
	}

	ctx := context.Background()
	cs := e.cluster.Client
	name := "sbx-" + id
	pod, err := cs.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	checkPod(t, pod, id)
	sec, err := cs.CoreV1().Secrets(e.ns).Get(ctx, name+"-sidecar", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get secret: %v", err)
	}
	for _, k := range []string{"token", "tls.crt", "tls.key"} {
		if len(sec.Data[k]) == 0 {
			t.Errorf("secret lacks %s", k)
		}
	}
	np, err := cs.NetworkingV1().NetworkPolicies(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get network policy: %v", err)
	}
	// Owned by the pod, so the garbage collector removes them with it.
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: pod.UID}}
	if diff := cmp.Diff(owner, sec.OwnerReferences); diff != "" {
		t.Errorf("secret owners (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(owner, np.OwnerReferences); diff != "" {
		t.Errorf("network policy owners (-want +got):\n%s", diff)
	}
	if len(np.Spec.Egress) != 0 || !hasPolicyType(np.Spec.PolicyTypes, "Egress") {
		t.Errorf("network policy egress = %+v %v, want Egress with no rules (deny all)", np.Spec.Egress, np.Spec.PolicyTypes)
	}
	if np.Spec.PodSelector.MatchLabels[kube.LabelPod] != name {
		t.Errorf("network policy selects %v, want the pod", np.Spec.PodSelector.MatchLabels)
	}

	e.boxkite(t, "session", "rm", id, "--yes")
	if _, err := cs.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod after destroy: %v, want not found", err)
	}
	if _, err := cs.CoreV1().Secrets(e.ns).Get(ctx, name+"-sidecar", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("secret after destroy: %v, want not found", err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(e.ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("network policy after destroy: %v, want not found", err)
	}
}

func hasPolicyType(ts any, want string) bool { return strings.Contains(fmt.Sprint(ts), want) }

func checkPod(t *testing.T, pod *corev1.Pod, id string) {
	t.Helper()
	if pod.Labels[kube.LabelSandbox] != id || pod.Labels[kube.LabelState] != kube.StateBound {
		t.Errorf("pod labels = %v", pod.Labels)
	}
	sc := pod.Spec.Containers[0].SecurityContext
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken ||
		sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security = automount %v, container %+v; want the restricted profile", pod.Spec.AutomountServiceAccountToken, sc)
	}
	// The reaper ends it, at the expiry the annotation shows.
	if pod.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("pod has activeDeadlineSeconds %d, want none", *pod.Spec.ActiveDeadlineSeconds)
	}
	if _, err := time.Parse(time.RFC3339, pod.Annotations[kube.AnnotationExpiresAt]); err != nil {
		t.Errorf("pod's %s annotation: %v", kube.AnnotationExpiresAt, err)
	}
	// As the API server stored it: one without user namespace support
	// would drop the field.
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		t.Errorf("pod hostUsers = %v, want false (a user namespace of the pod's own)", pod.Spec.HostUsers)
	}
}

// TestWarmPoolRace is acceptance 2: 20 concurrent creates against a warm
// pool of 5 claim each warm pod exactly once; the other 15 start cold.
func TestWarmPoolRace(t *testing.T) {
	testWarmPoolRace(t, newEnv(t, kube.Config{PoolSize: 5}))
}

func testWarmPoolRace(t *testing.T, e *env) {
	d, err := kube.New(e.cluster.Client, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Fill the pool, then stop refilling so the race meets exactly 5.
	fill, stopFill := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(fill) }()
	// Ready counts warm pods whose start returned, so stopping the fill
	// then cannot cut a start short (which would delete its pod).
	waitFor(t, "5 warm pods ready", func() bool { return d.PoolStats().Ready == 5 })
	stopFill()
	<-done
	warm := pods(t, e, kube.StateWarm, "")
	if len(warm) != 5 {
		t.Fatalf("%d warm pods after the fill, want 5", len(warm))
	}

	const n = 20
	eps := make([]model.Endpoint, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			eps[i], errs[i] = d.Create(ctx, model.Spec{ID: fmt.Sprintf("race-%02d", i), Lifetime: time.Hour})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("create %d: %v", i, err)
		}
	}
	st := d.PoolStats()
	if st.Claims != 5 || st.Misses != n-5 {
		t.Errorf("pool stats = %+v, want 5 claims and %d misses", st, n-5)
	}
	t.Logf("lost compare-and-swap races: %d", st.LostRaces)
	bySandbox := map[string][]string{}
	claimed := 0
	for _, p := range pods(t, e, kube.StateBound, "") {
		id := p.Labels[kube.LabelSandbox]
		bySandbox[id] = append(bySandbox[id], p.Name)
		if strings.HasPrefix(p.Name, "sbx-warm-") {
			claimed++
		}
	}
	if claimed != 5 {
		t.Errorf("%d warm pods bound, want all 5", claimed)
	}
	for i := range n {
		id := fmt.Sprintf("race-%02d", i)
		if len(bySandbox[id]) != 1 {
			t.Errorf("sandbox %s has pods %v, want exactly one", id, bySandbox[id])
		}
	}
	// Every endpoint is distinct: no pod serves two sandboxes.
	seen := map[string]int{}
	for i, ep := range eps {
		if j, dup := seen[ep.Address]; dup {
			t.Errorf("creates %d and %d got the same pod at %s", j, i, ep.Address)
		}
		seen[ep.Address] = i
	}
	// The pool's metrics report the claims.
	var b strings.Builder
	d.WriteMetrics(&b)
	if !strings.Contains(b.String(), "boxkite_kube_warm_pool_claims_total 5\n") {
		t.Errorf("metrics lack 5 claims:\n%s", b.String())
	}
	for i := range n {
		if err := d.Delete(ctx, fmt.Sprintf("race-%02d", i)); err != nil {
			t.Errorf("delete: %v", err)
		}
	}
}

// TestRestart is acceptance 3: a restarted server re-adopts running
// sandboxes; one whose pod was deleted behind its back is marked lost.
func TestRestart(t *testing.T) {
	testRestart(t, newEnv(t, kube.Config{}))
}

func testRestart(t *testing.T, e *env) {
	e.start(t)
	ctx := context.Background()
	c := e.client()
	keep, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "keep"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, keep.ID, api.ExecRequest{Command: "echo before > mark"}); err != nil {
		t.Fatal(err)
	}

	e.restart(t)
	c = e.client()
	res, err := c.Exec(ctx, keep.ID, api.ExecRequest{Command: "cat mark"})
	if err != nil || strings.TrimSpace(res.Stdout) != "before" {
		t.Fatalf("exec after restart = %+v, %v; want the sandbox adopted with its files", res, err)
	}

	// Behind the server's back, and while it is down.
	e.stop()
	if err := e.cluster.Client.CoreV1().Pods(e.ns).Delete(ctx, "sbx-"+gone.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod's sidecar to stop", func() bool { return len(e.kubelet.Running()) == 1 })
	e.start(t)
	c = e.client()
	sb, err := c.Sandbox(ctx, gone.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Status != api.StatusLost {
		t.Errorf("sandbox with a deleted pod is %s, want %s", sb.Status, api.StatusLost)
	}
	if sb, err := c.Sandbox(ctx, keep.ID); err != nil || sb.Status != api.StatusActive {
		t.Errorf("kept sandbox = %+v, %v; want active", sb, err)
	}
	// The lost sandbox's Secret and NetworkPolicy went with it.
	if _, err := e.cluster.Client.CoreV1().Secrets(e.ns).Get(ctx, "sbx-"+gone.ID+"-sidecar", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lost sandbox's secret: %v, want not found", err)
	}
	if err := c.DeleteSandbox(ctx, keep.ID); err != nil {
		t.Fatal(err)
	}
}

// pods lists the driver's pods in state (and phase, unless "").
func pods(t *testing.T, e *env, state string, phase corev1.PodPhase) []corev1.Pod {
	t.Helper()
	list, err := e.cluster.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: kube.LabelState + "=" + state,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if phase == "" || p.Status.Phase == phase {
			out = append(out, p)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing t after a minute.
// TestLostWhileRunning: a pod deleted behind a running server's back is
// marked lost without a restart; one the server destroys stays destroyed.
func TestLostWhileRunning(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	gone, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	ended, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "ended"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSandbox(ctx, ended.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.cluster.Client.CoreV1().Pods(e.ns).Delete(ctx, "sbx-"+gone.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var status string
	waitFor(t, "the sandbox whose pod was deleted to be marked lost", func() bool {
		sb, err := c.Sandbox(ctx, gone.ID)
		if err != nil {
			t.Fatal(err)
		}
		status = sb.Status
		return status == api.StatusLost
	})
	// The destroyed one was reported gone too, before the lost one was
	// marked (both wait the same grace): its record must have won.
	sb, err := c.Sandbox(ctx, ended.ID)
	if err != nil || sb.Status != api.StatusDestroyed {
		t.Errorf("destroyed sandbox = %+v, %v; want %s", sb, err, api.StatusDestroyed)
	}
	if _, err := e.cluster.Client.CoreV1().Secrets(e.ns).Get(ctx, "sbx-"+gone.ID+"-sidecar", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lost sandbox's secret: %v, want not found", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPodUserNamespace: sandbox pods ask for a user namespace of their own
// (hostUsers: false; issue 17, finding 2, on Kubernetes), and the API
// server keeps it on a pod that also mounts a volume's claim (the kubelet
// idmaps volumes into the pod's range); with HostUsers set they run in
// the node's user namespace instead.
func TestPodUserNamespace(t *testing.T) {
	for _, hostUsers := range []bool{false, true} {
		t.Run(fmt.Sprintf("HostUsers=%v", hostUsers), func(t *testing.T) {
			e := newEnv(t, kube.Config{HostUsers: hostUsers})
			d, err := kube.New(e.cluster.Client, e.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := d.CreateVolume(ctx, "userns", 1<<30); err != nil {
				t.Fatal(err)
			}
			id := "userns-" + strconv.FormatBool(hostUsers)
			if _, err := d.Create(ctx, model.Spec{ID: id, Lifetime: time.Hour, Volumes: []model.VolumeMount{{ID: "userns", Path: "/workspace/data"}}}); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = d.Delete(context.Background(), id) })
			pod, err := e.cluster.Client.CoreV1().Pods(e.ns).Get(ctx, "sbx-"+id, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers != hostUsers {
				t.Errorf("stored pod hostUsers = %v, want %v", pod.Spec.HostUsers, hostUsers)
			}
			claim := false
			for _, v := range pod.Spec.Volumes {
				claim = claim || v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "boxkite-vol-userns"
			}
			if !claim {
				t.Errorf("stored pod volumes %+v, want the volume's claim", pod.Spec.Volumes)
			}
		})
	}
}
