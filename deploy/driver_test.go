package deploy

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/kubetest"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestDriverUnderChartRole runs the kube driver with the rights the chart
// gives the server's account, and nothing more (its requests impersonate
// that account): create from the warm pool and cold, pause, resume, list,
// and destroy running and paused sandboxes; create and delete a volume. checkCanI says what the Role
// allows; this says it is enough for what the driver does.
func TestDriverUnderChartRole(t *testing.T) {
	helmBinary(t)
	c := kubetest.Shared(t)
	objs := install(t, c, "driver")
	ns := "s-driver"
	defaultSA(t, c, ns) // no controller-manager here to make it
	var account string
	for _, b := range find(objs, "RoleBinding") {
		s := dict(list(b["subjects"])[0])
		account = "system:serviceaccount:" + str(s["namespace"]) + ":" + str(s["name"])
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: account, Groups: []string{
		"system:serviceaccounts", "system:serviceaccounts:" + strings.Split(account, ":")[2], "system:authenticated",
	}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.StartKubelet(t, ns, servertest.SidecarBinary(t))
	d, err := kube.New(cs, kube.Config{
		Namespace: ns, SnapshotDir: t.TempDir(), PoolSize: 1, ReadyTimeout: time.Minute,
		Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	defer func() { stop(); <-done; d.Release() }()
	for d.PoolStats().Ready < 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("no warm pod: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	warm, cold := model.NewID(), model.NewID()
	if _, err := d.Create(ctx, model.Spec{ID: warm, Lifetime: time.Hour}); err != nil {
		t.Fatalf("create from the warm pool: %v", err)
	}
	if d.PoolStats().Claims != 1 {
		t.Errorf("pool stats %+v: the first create did not claim the warm pod", d.PoolStats())
	}
	// Another size than the pool's: a cold pod.
	if _, err := d.Create(ctx, model.Spec{ID: cold, Size: api.SizeMedium, Lifetime: time.Hour}); err != nil {
		t.Fatalf("create cold: %v", err)
	}
	if got, err := d.List(ctx); err != nil || len(got) != 2 {
		t.Errorf("list: %d sandboxes, %v; want 2", len(got), err)
	}
	for _, id := range []string{warm, cold} {
		if err := d.Pause(ctx, id, api.PauseFilesystem); err != nil {
			t.Fatalf("pause %s: %v", id, err)
		}
		if err := d.Resume(ctx, id, nil); err != nil {
			t.Fatalf("resume %s: %v", id, err)
		}
		if _, err := d.Endpoint(ctx, id); err != nil {
			t.Errorf("endpoint of resumed %s: %v", id, err)
		}
	}
	if err := d.CreateVolume(ctx, "v1", 1<<30); err != nil {
		t.Errorf("create volume: %v", err)
	}
	if err := d.DeleteVolume(ctx, "v1"); err != nil {
		t.Errorf("delete volume: %v", err)
	}
	// The warm one is destroyed while paused, the cold one while running.
	if err := d.Pause(ctx, warm, api.PauseFilesystem); err != nil {
		t.Fatalf("pause %s again: %v", warm, err)
	}
	for _, id := range []string{warm, cold} {
		if err := d.Delete(ctx, id); err != nil {
			t.Errorf("delete %s: %v", id, err)
		}
		checkGone(t, c, ns, id)
	}
}

// checkGone fails unless nothing labelled with sandbox id is left in ns
// (asked with the admin's client, which may list Secrets).
func checkGone(t *testing.T, c *kubetest.Cluster, ns, id string) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + id}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := c.Client.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	pols, err := c.Client.NetworkingV1().NetworkPolicies(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			left = append(left, "pod "+p.Name)
		}
	}
	for _, s := range secs.Items {
		left = append(left, "secret "+s.Name)
	}
	for _, p := range pols.Items {
		left = append(left, "networkpolicy "+p.Name)
	}
	if len(left) > 0 {
		t.Errorf("left of sandbox %s after delete: %v", id, left)
	}
}
