package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/kubetest"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatsOnKube: the kube driver reports a sandbox's use, read by its
// pod's sidecar from the cgroup it runs in (GET /usage): /v1's stats
// have its memory, and E2B's getMetrics its memory and CPU use, which
// grows while a command spins. Before, stats answered not_supported
// and getMetrics 0. (The test kubelet runs each pod in a cgroup of its
// own, as root: the numbers are the pod's, TestStatsOwnPod.)
func TestStatsOnKube(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Size: api.SizeSmall})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.SandboxStats(ctx, sb.ID)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.MemoryBytes <= 0 {
		t.Errorf("stats %+v, want the memory held", st)
	}

	type metric struct {
		CPUCount   int     `json:"cpuCount"`
		CPUUsedPct float64 `json:"cpuUsedPct"`
		MemUsed    int64   `json:"memUsed"`
	}
	metrics := func() metric {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/sandboxes/"+sb.ID+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-API-Key", e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got []metric
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || len(got) != 1 {
			t.Fatalf("getMetrics: %d, %v, %+v", resp.StatusCode, err, got)
		}
		return got[0]
	}
	spin, err := c.StartProcess(ctx, sb.ID, api.ProcessStartRequest{Command: "while :; do :; done", MaxRuntimeSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.StopProcess(ctx, sb.ID, spin.ProcessID) }()
	var m metric
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if m = metrics(); m.CPUUsedPct > 0 && m.MemUsed > 0 {
			break
		}
	}
	if m.CPUUsedPct <= 0 || m.CPUUsedPct > 100 || m.MemUsed <= 0 || m.CPUCount < 1 {
		t.Errorf("getMetrics %+v, want CPU use and memory", m)
	}
}

// TestStatsKeptSidecar: Stats, which E2B's getMetrics polls, keeps the
// sandbox's sidecar: 10 calls cost one pod List and one Secret Get, and
// one connection to the sidecar, not 10 of each (and 10 TLS handshakes).
// A pod that changed behind the driver's back (another replica's pause
// and resume) is looked up again on the next call, which reports the new
// pod's usage; WatchLost's events drop a kept sidecar whose pod goes.
func TestStatsKeptSidecar(t *testing.T) {
	e := newEnv(t, kube.Config{SnapshotDir: t.TempDir()})
	cs, reqs := e.cluster.CountingClient(t)
	d, err := kube.New(cs, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	other, err := kube.New(e.cluster.Client, e.cfg) // another replica
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const id = "kept"
	if _, err := d.Create(ctx, model.Spec{ID: id, Lifetime: time.Hour}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Delete(context.Background(), id)
		d.Release()
	})
	stats := func(what string) {
		t.Helper()
		st, err := d.Stats(ctx, id)
		if err != nil || st.MemoryBytes <= 0 || st.CPUMicros <= 0 {
			t.Fatalf("stats %s: %+v, %v; want the memory and CPU used", what, st, err)
		}
	}

	reqs.Take()
	dials := kube.SidecarDials(d)
	for i := range 10 {
		stats(fmt.Sprintf("call %d", i+1))
	}
	if diff := cmp.Diff([]string{"list pods", "get secrets"}, reqs.Take()); diff != "" {
		t.Errorf("API requests of 10 Stats calls (-want +got):\n%s", diff)
	}
	if n := kube.SidecarDials(d) - dials; n != 1 {
		t.Errorf("10 Stats calls opened %d connections to the sidecar, want 1", n)
	}

	// Paused and resumed elsewhere: a new pod, found again.
	if err := other.Pause(ctx, id, api.PauseFilesystem); err != nil {
		t.Fatal(err)
	}
	if err := other.Resume(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	reqs.Take()
	stats("after a pause and resume elsewhere")
	stats("again")
	// The test kubelet gives each pod an address of its own: the kept
	// one fails, and the pod is looked up once.
	if diff := cmp.Diff([]string{"list pods", "get secrets"}, reqs.Take()); diff != "" {
		t.Errorf("API requests of 2 Stats calls after the pod changed (-want +got):\n%s", diff)
	}

	// The watch drops the kept sidecar of a pod deleted elsewhere.
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- d.WatchLost(watchCtx, func(string) {}) }()
	defer func() {
		stopWatch()
		if err := <-watched; err != nil {
			t.Errorf("watch: %v", err)
		}
	}()
	if n := kube.KeptSidecars(d); n != 1 {
		t.Fatalf("%d kept sidecars, want the sandbox's", n)
	}
	if err := other.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch to drop the deleted pod's sidecar", func() bool { return kube.KeptSidecars(d) == 0 })
	if _, err := d.Stats(ctx, id); err == nil || !strings.Contains(err.Error(), "no running pod") {
		t.Errorf("stats of a deleted sandbox: %v, want no running pod", err)
	}
}

// BenchmarkStats is one Stats call of a running sandbox (what each E2B
// getMetrics poll costs the driver), against the real API server and
// sidecar; apireqs/op is the API server requests per call.
func BenchmarkStats(b *testing.B) {
	c := kubetest.Shared(b)
	ns := c.Namespace(b)
	c.StartKubelet(b, ns, servertest.SidecarBinary(b))
	cs, reqs := c.CountingClient(b)
	d, err := kube.New(cs, kube.Config{Namespace: ns, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.Create(ctx, model.Spec{ID: "bench", Lifetime: time.Hour}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = d.Delete(context.Background(), "bench")
		d.Release()
	})
	reqs.Take()
	for b.Loop() {
		if _, err := d.Stats(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(reqs.Take()))/float64(b.N), "apireqs/op")
}

// TestStatsOwnPod: a sandbox's Stats (and so getMetrics' CPU) count its
// own pod's use alone. Of two sandboxes, one spinning and one idle, the
// idle one's CPU time grows by less than a fifth of what the busy one's
// does meanwhile. The test kubelet runs each pod in a cgroup of its own
// (kubetest.Kubelet), as a container runs; before, every sidecar read
// the test's cgroups (on this host the root of cpuacct's hierarchy: the
// whole machine's CPU), and the idle sandbox counted as much CPU as the
// busy one. The busy pod's cgroup goes with it.
func TestStatsOwnPod(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" { // CI runs as root
		t.Skip("the test kubelet gives pods cgroups of their own as root only")
	}
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	var busy, idle string
	for _, id := range []*string{&busy, &idle} {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Size: api.SizeSmall})
		if err != nil {
			t.Fatal(err)
		}
		*id = sb.ID
	}
	cpu := func(id string) int64 {
		t.Helper()
		st, err := e.driver.Stats(ctx, id)
		if err != nil || st.CPUMicros <= 0 {
			t.Fatalf("stats of %s: %+v, %v; want the CPU time used", id, st, err)
		}
		return st.CPUMicros
	}
	pods, err := e.cluster.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + busy})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the busy sandbox's pod: %v, %v", pods, err)
	}
	dirs := e.kubelet.CgroupDirs(pods.Items[0].Name)
	if len(dirs) == 0 {
		t.Fatalf("the busy sandbox's pod %s has no cgroup of its own", pods.Items[0].Name)
	}

	busy0, idle0 := cpu(busy), cpu(idle)
	spin, err := c.StartProcess(ctx, busy, api.ProcessStartRequest{Command: "while :; do :; done", MaxRuntimeSeconds: 300})
	if err != nil {
		t.Fatal(err)
	}
	const want = 1_000_000 // µs of the busy loop's
	waitForLong(t, "a second of the busy sandbox's CPU time", 4*time.Minute, func() bool { return cpu(busy)-busy0 >= want })
	idleUsed, busyUsed := cpu(idle)-idle0, cpu(busy)-busy0
	t.Logf("CPU time counted meanwhile: busy %d µs, idle %d µs", busyUsed, idleUsed)
	if idleUsed*5 > busyUsed {
		t.Errorf("the idle sandbox counted %d µs of CPU time while the busy one counted %d µs; want under a fifth", idleUsed, busyUsed)
	}
	if _, err := c.StopProcess(ctx, busy, spin.ProcessID); err != nil {
		t.Error(err)
	}

	if err := c.DeleteSandbox(ctx, busy); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the busy pod's cgroup to go", func() bool {
		for _, d := range dirs {
			if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
				return false
			}
		}
		return true
	})
}
