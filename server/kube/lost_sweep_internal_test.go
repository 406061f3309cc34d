package kube

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/kubetest"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// Sizes of BenchmarkLostSweep's history: the active sandboxes a sweep
// compares with their pods, beside the destroyed ones a long-lived
// database holds, which it must not read.
const (
	sweepActive    = 1000
	sweepDestroyed = 4000
)

// BenchmarkLostSweep is one pass of the lost-pod sweep (server/sandbox's
// sweepLost, every Config.LostSweep on every replica) over 1,000 active
// sandboxes, each with its running pod (the driver's own pod spec and a
// kubelet's status), beside 4,000 destroyed ones: the store's read of the
// active rows, on SQLite and on Postgres (BOXKITE_TEST_POSTGRES), and the
// driver's Live. Per op it reports the API requests and the bytes the API
// server sent besides time and allocations; "live" is the driver's list,
// "live=full-pods" lists whole pods, as Live did before (the comparison).
func BenchmarkLostSweep(b *testing.B) {
	c := kubetest.Shared(b)
	ns := c.Namespace(b)
	client, wire := wireCountingClient(b, c.Config)
	d, err := New(client, Config{Namespace: ns, LostSweep: -1, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	active := seedSweepPods(b, d, sweepActive)

	stores := map[string]string{"sqlite": "sqlite:" + filepath.Join(b.TempDir(), "sweep.db")}
	if dsn := servertest.PostgresDSN(b); dsn != "" {
		stores["postgres"] = dsn
	}
	for _, name := range []string{"sqlite", "postgres"} {
		dsn, ok := stores[name]
		if !ok {
			continue
		}
		st, err := sqlstore.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		seedSweepRows(b, st, active, sweepDestroyed)
		b.Run("store="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rows, err := st.SandboxesWithStatus(ctx, api.StatusActive)
				if err != nil || len(rows) != len(active) {
					b.Fatalf("active rows: %d, %v; want %d", len(rows), err, len(active))
				}
			}
		})
	}
	run := func(name string, live func(context.Context) (map[string]bool, error)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			wire.take()
			cpu0 := cpuTime()
			for b.Loop() {
				got, err := live(ctx)
				if err != nil || len(got) != len(active) {
					b.Fatalf("live: %d, %v; want %d", len(got), err, len(active))
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			reqs, bytes := wire.take()
			b.ReportMetric(float64(reqs)/float64(b.N), "requests/op")
			b.ReportMetric(float64(bytes)/float64(b.N), "wire-B/op")
		})
	}
	run("live", d.Live)
	run("live=full-pods", d.liveFullPods)
}

// liveFullPods is Live as it was before it listed metadata only: whole
// pods, their spec and status decoded. BenchmarkLostSweep's comparison.
func (d *Driver) liveFullPods(ctx context.Context) (map[string]bool, error) {
	pods := d.client.CoreV1().Pods(d.cfg.Namespace)
	live := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: boundSelector(), Limit: livePageSize}
	for {
		list, err := pods.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list sandbox pods: %w", err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			if id := p.Labels[LabelSandbox]; id != "" && p.DeletionTimestamp == nil && !stopped(p) {
				live[id] = true
			}
		}
		if list.Continue == "" {
			return live, nil
		}
		opts.Continue = list.Continue
	}
}

// wire counts a client's requests and the bytes of their answers' bodies.
type wire struct {
	reqs, bytes atomic.Int64
}

// take returns the counts since the last take and resets them.
func (w *wire) take() (reqs, bytes int64) { return w.reqs.Swap(0), w.bytes.Swap(0) }

// wireCountingClient is a client of rc whose requests w counts.
func wireCountingClient(t testing.TB, rc *rest.Config) (kubernetes.Interface, *wire) {
	t.Helper()
	w := &wire{}
	cfg := rest.CopyConfig(rc)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttle in a benchmark's loop
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			w.reqs.Add(1)
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body = &countingBody{ReadCloser: resp.Body, n: &w.bytes}
			}
			return resp, err
		})
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, w
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// seedSweepPods creates n bound sandbox pods as the driver makes them,
// each Running with the status a kubelet reports, and returns their
// sandboxes' ids.
func seedSweepPods(t testing.TB, d *Driver, n int) []string {
	t.Helper()
	ctx := t.Context()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = model.NewID()
	}
	now := metav1.Now()
	err := parallel(n, func(i int) error {
		p, err := d.pod(podPlan{name: podName(ids[i]), sandbox: ids[i], size: api.SizeSmall, storageGB: 1, expiresAt: now.Add(time.Hour)})
		if err != nil {
			return err
		}
		p, err = d.client.CoreV1().Pods(d.cfg.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		p.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, StartTime: &now,
			PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "10.255.0.1", HostIPs: []corev1.HostIP{{IP: "10.255.0.1"}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: containerName, Image: d.cfg.Image, Ready: true, Started: ptr(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		}
		_, err = d.client.CoreV1().Pods(d.cfg.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("seed pods: %v", err)
	}
	return ids
}

// seedSweepRows stores a sandbox row, as the kube driver's creates leave
// them, for each of active, and destroyed rows besides.
func seedSweepRows(t testing.TB, st *sqlstore.Store, active []string, destroyed int) {
	t.Helper()
	ctx := t.Context()
	acct := &model.Account{ID: model.NewID(), Email: "sweep-" + model.NewID() + "@example.com", CreatedAt: time.Now()}
	if err := st.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	cert, err := newCert("sbx-sweep", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	err = parallel(len(active)+destroyed, func(i int) error {
		created := time.Now().Add(-time.Duration(len(active)+destroyed-i) * time.Second)
		sb := &model.Sandbox{
			ID: model.NewID(), AccountID: acct.ID, Size: api.SizeSmall, StorageGB: 1, LifetimeMinutes: 60,
			Status: api.StatusActive, CreatedAt: created, ExpiresAt: created.Add(time.Hour), Driver: "kube",
			Endpoint: model.Endpoint{Network: "tcp", Address: "10.0.0.1:8443", Token: model.NewAPIKey(), CertPEM: cert.certPEM},
		}
		if i < len(active) {
			sb.ID = active[i]
		} else {
			gone := created.Add(time.Minute)
			sb.Status, sb.DestroyReason, sb.DestroyedAt = api.StatusDestroyed, model.ReasonDeleted, &gone
		}
		return st.CreateSandbox(ctx, sb)
	})
	if err != nil {
		t.Fatalf("seed rows: %v", err)
	}
}

// parallel runs fn(0) … fn(n-1) on 8 goroutines and returns the first error.
func parallel(n int, fn func(i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestLive: Live names the sandboxes whose bound pod runs or is starting,
// across pages, from metadata alone: not a pod that failed or succeeded
// (left out by the API server), one being deleted, a warm pod, nor
// another namespace's.
func TestLive(t *testing.T) {
	c := kubetest.Shared(t)
	ns := c.Namespace(t)
	d, err := New(c.Client, Config{Namespace: ns, LostSweep: -1, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	d.livePage = 2 // three pages for the five live pods
	ctx := t.Context()
	pods := d.client.CoreV1().Pods(ns)
	mk := func(sandbox string, phase corev1.PodPhase, finalizer bool) {
		t.Helper()
		p, err := d.pod(podPlan{name: podName(cmp.Or(sandbox, "warm-"+model.NewID())), sandbox: sandbox, size: api.SizeSmall})
		if err != nil {
			t.Fatal(err)
		}
		if finalizer {
			p.Finalizers = []string{"boxkite.dev/test"}
		}
		if p, err = pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			p.Status.Phase = phase
			if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if finalizer {
			if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				patch := []byte(`{"metadata":{"finalizers":null}}`)
				_, _ = c.Client.CoreV1().Pods(ns).Patch(context.Background(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			})
		}
	}
	want := map[string]bool{}
	for _, phase := range []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodRunning, corev1.PodUnknown} {
		id := model.NewID()
		mk(id, phase, false)
		want[id] = true
	}
	mk(model.NewID(), corev1.PodFailed, false)
	mk(model.NewID(), corev1.PodSucceeded, false)
	mk(model.NewID(), corev1.PodRunning, true) // deleting, held by its finalizer
	mk("", corev1.PodRunning, false)           // warm
	other, err := New(c.Client, Config{Namespace: c.Namespace(t), LostSweep: -1, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := other.pod(podPlan{name: "sbx-elsewhere", sandbox: "elsewhere", size: api.SizeSmall})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.client.CoreV1().Pods(other.cfg.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	got, err := d.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("Live (-want +got):\n%s", diff)
	}
}
