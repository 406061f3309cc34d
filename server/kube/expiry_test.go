package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The control plane's reaper is the one timer of a kube sandbox: its pod
// has no activeDeadlineSeconds (which no extend could raise, so the
// kubelet would end an extended sandbox early) and shows the sandbox's
// expiry as the boxkite.dev/expires-at annotation, patched at every
// change. The test kubelet enforces activeDeadlineSeconds as a real one.

// podOf returns sandbox id's running pod, failing t if it has none.
func podOf(t *testing.T, e *env, id string) *corev1.Pod {
	t.Helper()
	pod, err := e.cluster.Client.CoreV1().Pods(e.ns).Get(context.Background(), boundPod(t, e, id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// checkExpiry fails t unless sandbox sb's pod runs with no deadline and
// is annotated with sb's expires_at.
func checkExpiry(t *testing.T, e *env, sb *api.Sandbox, when string) {
	t.Helper()
	pod := podOf(t, e, sb.ID)
	if pod.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("%s: pod %s has activeDeadlineSeconds %d, want none", when, pod.Name, *pod.Spec.ActiveDeadlineSeconds)
	}
	if got, want := pod.Annotations[kube.AnnotationExpiresAt], sb.ExpiresAt.UTC().Format(time.RFC3339); got != want {
		t.Errorf("%s: pod %s's %s = %q, want %q (the sandbox's expires_at)", when, pod.Name, kube.AnnotationExpiresAt, got, want)
	}
}

// TestExpiryAnnotation: a sandbox claimed from the warm pool, extended,
// then paused and resumed (a new pod) carries its expiry each time, and
// never a deadline; the v1 extend's side.
func TestExpiryAnnotation(t *testing.T) {
	e := newEnv(t, kube.Config{PoolSize: 1, SnapshotDir: t.TempDir()})
	e.start(t)
	runPool(t, e)
	ctx := context.Background()
	c := e.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "warm", LifetimeMinutes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if e.driver.PoolStats().Claims != 1 {
		t.Fatalf("pool stats %+v: the sandbox did not come from the pool", e.driver.PoolStats())
	}
	checkExpiry(t, e, sb, "claimed")
	cold, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "cold", Size: api.SizeMedium, LifetimeMinutes: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkExpiry(t, e, cold, "cold")

	extended, err := c.ExtendSandbox(ctx, sb.ID, 60)
	if err != nil {
		t.Fatal(err)
	}
	if !extended.ExpiresAt.After(sb.ExpiresAt) {
		t.Fatalf("extend: expires_at %v, want after %v", extended.ExpiresAt, sb.ExpiresAt)
	}
	checkExpiry(t, e, extended, "extended")

	if _, err := c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem); err != nil {
		t.Fatalf("pause: %v", err)
	}
	time.Sleep(1100 * time.Millisecond) // the pause moves expires_at on by its length, in whole seconds here
	if _, err := c.ResumeSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("resume: %v", err)
	}
	resumed, err := c.Sandbox(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !resumed.ExpiresAt.After(extended.ExpiresAt) {
		t.Fatalf("resume: expires_at %v, want after %v (moved on by the pause)", resumed.ExpiresAt, extended.ExpiresAt)
	}
	checkExpiry(t, e, resumed, "resumed")
}

// runPool keeps the running server's warm pool filled until t ends, and
// waits for its first warm pod.
func runPool(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool := make(chan struct{})
	go func() { defer close(pool); e.driver.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-pool })
	waitFor(t, "a warm pod", func() bool { return e.driver.PoolStats().Ready == 1 })
}

// e2bCall makes an E2B REST call with the env's key and returns the
// status and body.
func e2bCall(t *testing.T, e *env, method, path string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, e.url+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", e.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// e2bCreate creates a sandbox through the E2B API, kept timeout seconds.
func e2bCreate(t *testing.T, e *env, timeout int) string {
	t.Helper()
	code, body := e2bCall(t, e, http.MethodPost, "/sandboxes", map[string]any{"templateID": "base", "timeout": timeout})
	if code != http.StatusCreated {
		t.Fatalf("e2b create: %d %s", code, body)
	}
	var sb struct {
		SandboxID string `json:"sandboxID"`
	}
	if err := json.Unmarshal(body, &sb); err != nil {
		t.Fatal(err)
	}
	return sb.SandboxID
}

// TestExpiryExtendedPastStart is the bug: a sandbox extended past the
// lifetime it was created with (through E2B's refreshes and timeout, as
// the SDKs' setTimeout and connect do) keeps its pod past that lifetime,
// the pod's annotation following each change, until the reaper ends it at
// its new expiry. On the old driver its pod had a deadline from its
// lifetime, and the kubelet killed it while the control plane still
// showed it running.
func TestExpiryExtendedPastStart(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	// Seconds apart, and far enough that a slow cold start still leaves
	// time to extend before the first expiry.
	id := e2bCreate(t, e, 15)
	sb, err := c.Sandbox(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	firstEnd := sb.ExpiresAt
	checkExpiry(t, e, sb, "created")

	for _, step := range []struct {
		path string
		body map[string]any
		want int
	}{
		{"/sandboxes/" + id + "/refreshes", map[string]any{"duration": 30}, http.StatusNoContent},
		{"/sandboxes/" + id + "/timeout", map[string]any{"timeout": 45}, http.StatusNoContent},
	} {
		if code, body := e2bCall(t, e, http.MethodPost, step.path, step.body); code != step.want {
			t.Fatalf("POST %s: %d %s", step.path, code, body)
		}
		if sb, err = c.Sandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
		checkExpiry(t, e, sb, step.path)
	}
	newEnd := sb.ExpiresAt
	if !newEnd.After(firstEnd.Add(15 * time.Second)) {
		t.Fatalf("expires_at %v after the timeout, want well after the first %v", newEnd, firstEnd)
	}

	// Past the first lifetime (and any deadline counted from the pod's
	// start a little later), the pod runs and the sandbox answers.
	time.Sleep(time.Until(firstEnd.Add(5 * time.Second)))
	res, err := c.Exec(ctx, id, api.ExecRequest{Command: "echo alive", Timeout: 60})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec past the first lifetime: %+v, %v; want the sandbox running", res, err)
	}
	if time.Now().After(newEnd) {
		t.Fatalf("the exec returned past the new expiry %v: the host is too slow for this test's timing", newEnd)
	}
	if pod := podOf(t, e, id); pod.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s is %s past the first lifetime, want Running", pod.Name, pod.Status.Phase)
	}

	// The reaper ends it at the new expiry, with its pod.
	waitForLong(t, "the reaper to destroy the sandbox", time.Until(newEnd)+time.Minute, func() bool {
		sb, err := c.Sandbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sb.Status == api.StatusDestroyed
	})
	if sb, err = c.Sandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if sb.DestroyReason != "expired" || sb.DestroyedAt == nil || sb.DestroyedAt.Before(newEnd) {
		t.Errorf("destroyed %v for %q, want expired at or after %v", sb.DestroyedAt, sb.DestroyReason, newEnd)
	}
	if _, err := e.cluster.Client.CoreV1().Pods(e.ns).Get(ctx, "sbx-"+id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod after the reaper: %v, want not found", err)
	}
}

// TestExpiryWhileDown: with no deadline on pods, a sandbox that expires
// while the control plane is down is ended by the next one's start
// (reconcile adopts it, the reaper ends it), and a pod no row claims is
// deleted by the reconcile itself.
func TestExpiryWhileDown(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.srvCfg.ReaperInterval = time.Hour // this server never reaps
	e.start(t)
	ctx := context.Background()
	id := e2bCreate(t, e, 1)
	orphan := model.NewID()
	if _, err := e.driver.Create(ctx, model.Spec{ID: orphan}); err != nil {
		t.Fatal(err)
	}
	sb, err := e.client().Sandbox(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	e.stop()
	time.Sleep(time.Until(sb.ExpiresAt))
	if pod := podOf(t, e, id); pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("pod %s is %s with the control plane down, want Running", pod.Name, pod.Status.Phase)
	}

	e.srvCfg.ReaperInterval = 0 // the default
	e.start(t)
	c := e.client()
	waitFor(t, "the reaper to destroy the sandbox expired while the server was down", func() bool {
		sb, err := c.Sandbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sb.Status == api.StatusDestroyed
	})
	for _, name := range []string{"sbx-" + id, "sbx-" + orphan} {
		waitFor(t, "pod "+name+" to go", func() bool {
			_, err := e.cluster.Client.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
}

// TestWarmPoolMaxAge: warm pods have no deadline either; the pool's own
// PoolMaxAge is what bounds them: a warm pod past it is deleted and
// replaced.
func TestWarmPoolMaxAge(t *testing.T) {
	e := newEnv(t, kube.Config{PoolSize: 1, PoolMaxAge: 3 * time.Second})
	d, err := kube.New(e.cluster.Client, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var first string
	waitFor(t, "a warm pod", func() bool {
		warm := pods(t, e, kube.StateWarm, corev1.PodRunning)
		if len(warm) == 1 {
			first = warm[0].Name
			if warm[0].Spec.ActiveDeadlineSeconds != nil {
				t.Fatalf("warm pod %s has activeDeadlineSeconds %d, want none", first, *warm[0].Spec.ActiveDeadlineSeconds)
			}
		}
		return first != ""
	})
	waitFor(t, "the warm pod past PoolMaxAge to be replaced", func() bool {
		_, err := e.cluster.Client.CoreV1().Pods(e.ns).Get(ctx, first, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false
		}
		warm := pods(t, e, kube.StateWarm, corev1.PodRunning)
		return len(warm) == 1 && warm[0].Name != first
	})
}

// waitForLong is waitFor with a bound of its own.
func waitForLong(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
