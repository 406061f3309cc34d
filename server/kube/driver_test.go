package kube

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The tests in this file run against client-go's fake clientset, with
// reactors standing in for the API server's failures; kube_test.go runs
// the driver against a real API server.

func newFakeDriver(t *testing.T, cfg Config) (*Driver, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	cfg.Namespace = "ns"
	cfg.ReadyTimeout = 2 * time.Second
	cfg.Log = slog.New(slog.DiscardHandler)
	d, err := New(cs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, cs
}

// leftovers lists what the driver left in the namespace.
func leftovers(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	pods, _ := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	secs, _ := cs.CoreV1().Secrets("ns").List(ctx, metav1.ListOptions{})
	for _, s := range secs.Items {
		out = append(out, "secret/"+s.Name)
	}
	nps, _ := cs.NetworkingV1().NetworkPolicies("ns").List(ctx, metav1.ListOptions{})
	for _, n := range nps.Items {
		out = append(out, "networkpolicy/"+n.Name)
	}
	return out
}

var podsGR = schema.GroupResource{Resource: "pods"}

// TestCreateErrors: a create the API server refuses fails, names the
// cause, and leaves nothing behind.
func TestCreateErrors(t *testing.T) {
	tests := []struct {
		name     string
		verb     string
		resource string
		err      error
		want     string
	}{
		{
			"quota exceeded", "create", "pods",
			apierrors.NewForbidden(podsGR, "sbx-x", errors.New(`exceeded quota: sandboxes, requested: pods=1, used: pods=10, limited: pods=10`)),
			"exceeded quota",
		},
		{
			"secret quota exceeded", "create", "secrets",
			apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "sbx-x-sidecar", errors.New("exceeded quota: objects")),
			"create secret",
		},
		{
			"api server unavailable", "create", "networkpolicies",
			apierrors.NewServiceUnavailable("the server is currently unable to handle the request"),
			"unable to handle the request",
		},
		{
			"conflict", "create", "pods",
			apierrors.NewAlreadyExists(podsGR, "sbx-x"),
			"already exists",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, cs := newFakeDriver(t, Config{})
			cs.PrependReactor(tt.verb, tt.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			_, err := d.Create(context.Background(), model.Spec{ID: "x", Lifetime: time.Hour})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Create error = %v, want one containing %q", err, tt.want)
			}
			if got := leftovers(t, cs); len(got) != 0 {
				t.Errorf("left behind: %v", got)
			}
		})
	}
}

// TestCreatePodFails: a pod that fails to start is reported and cleaned up.
func TestCreatePodFails(t *testing.T) {
	d, cs := newFakeDriver(t, Config{})
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.GetAction).GetName()
		return true, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Status:     corev1.PodStatus{Phase: corev1.PodFailed, Message: "ImagePullBackOff"},
		}, nil
	})
	_, err := d.Create(context.Background(), model.Spec{ID: "x", Lifetime: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "ImagePullBackOff") {
		t.Fatalf("Create error = %v, want the pod's failure", err)
	}
	if got := leftovers(t, cs); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
}

// TestCreatePodWaits: a pod that never runs is reported with what it
// waits for, at once for an image it can never have, at the ready timeout
// for a pull that fails (the registry may come back), and cleaned up.
func TestCreatePodWaits(t *testing.T) {
	tests := []struct {
		reason string
		never  bool
	}{{"InvalidImageName", true}, {"ErrImageNeverPull", true}, {"ImagePullBackOff", false}}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			d, cs := newFakeDriver(t, Config{})
			cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				name := a.(k8stesting.GetAction).GetName()
				return true, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
					Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
						Name:  "sidecar",
						State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: tt.reason, Message: "registry.example.com/boxkite-sidecar:0.1"}},
					}}},
				}, nil
			})
			_, err := d.Create(context.Background(), model.Spec{ID: "x", Lifetime: time.Hour})
			if err == nil || !strings.Contains(err.Error(), tt.reason+": registry.example.com/boxkite-sidecar:0.1") {
				t.Fatalf("Create error = %v, want the pod's waiting reason", err)
			}
			if got := strings.Contains(err.Error(), "cannot start"); got != tt.never {
				t.Errorf("Create error = %v; given up before the ready timeout: %v, want %v", err, got, tt.never)
			}
			if got := leftovers(t, cs); len(got) != 0 {
				t.Errorf("left behind: %v", got)
			}
		})
	}
}

// TestUnavailable: with the API server down, Delete and List fail with
// its error, and a create with a warm pool starts cold after the pool's
// list fails (and then fails itself).
func TestUnavailable(t *testing.T) {
	d, cs := newFakeDriver(t, Config{PoolSize: 2})
	down := apierrors.NewServiceUnavailable("etcdserver: request timed out")
	cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, down })
	ctx := context.Background()
	if err := d.Delete(ctx, "x"); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("Delete error = %v, want the API server's", err)
	}
	if _, err := d.List(ctx); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("List error = %v, want the API server's", err)
	}
	if _, err := d.Create(ctx, model.Spec{ID: "x", Lifetime: time.Hour}); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("Create error = %v, want the API server's", err)
	}
	if got := d.PoolStats(); got.Misses != 1 || got.Claims != 0 {
		t.Errorf("pool stats = %+v, want one miss", got)
	}
}

// TestDeleteGone: deleting a sandbox with nothing left is not an error.
func TestDeleteGone(t *testing.T) {
	d, _ := newFakeDriver(t, Config{})
	if err := d.Delete(context.Background(), "gone"); err != nil {
		t.Fatalf("Delete = %v, want nil", err)
	}
}

// TestClaimCAS: the claim patch's outcomes. A conflict or a failed test
// op (422) is a lost race, not an error; anything else is an error.
func TestClaimCAS(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantWon bool
		wantErr bool
	}{
		{"won", nil, true, false},
		{"conflict", apierrors.NewConflict(podsGR, "w", errors.New("the object has been modified")), false, false},
		{"test op failed", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "w", nil), false, false},
		{"claimed pod deleted", apierrors.NewNotFound(podsGR, "w"), false, false},
		{"unavailable", apierrors.NewServiceUnavailable("down"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, cs := newFakeDriver(t, Config{PoolSize: 1})
			pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", ResourceVersion: "7"}}
			var patch []byte
			cs.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				patch = a.(k8stesting.PatchAction).GetPatch()
				return true, &pod, tt.err
			})
			exp := time.Date(2026, 12, 6, 19, 30, 0, 0, time.FixedZone("CET", 3600))
			won, err := d.pool.cas(context.Background(), pod, model.Spec{ID: "sb1", ExpiresAt: exp})
			if won != tt.wantWon || (err != nil) != tt.wantErr {
				t.Errorf("cas = %v, %v; want won %v, error %v", won, err, tt.wantWon, tt.wantErr)
			}
			want := `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},` +
				`{"op":"test","path":"/metadata/labels/boxkite.dev~1state","value":"warm"},` +
				`{"op":"replace","path":"/metadata/labels/boxkite.dev~1state","value":"bound"},` +
				`{"op":"add","path":"/metadata/labels/boxkite.dev~1sandbox","value":"sb1"},` +
				`{"op":"replace","path":"/metadata/annotations/cluster-autoscaler.kubernetes.io~1safe-to-evict","value":"false"},` +
				`{"op":"add","path":"/metadata/annotations/boxkite.dev~1expires-at","value":"2026-12-06T18:30:00Z"}]`
			if diff := cmp.Diff(want, string(patch)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodSpec checks the security-relevant parts of a sandbox pod, and
// that it has no activeDeadlineSeconds (the reaper ends it) but its
// expiry as an annotation.
func TestPodSpec(t *testing.T) {
	d, _ := newFakeDriver(t, Config{RuntimeClassName: "gvisor", ImagePullSecrets: []string{"regcred", "other"}})
	pod, err := d.pod(podPlan{
		name: "sbx-a", sandbox: "a", size: "medium", storageGB: 3,
		expiresAt: time.Date(2026, 12, 6, 20, 0, 0, 500, time.UTC),
		volumes:   []model.VolumeMount{{ID: "v1", Path: "/workspace/data"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkPodSecurity(t, pod)
	if pod.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("activeDeadlineSeconds = %d, want none", *pod.Spec.ActiveDeadlineSeconds)
	}
	if got, want := pod.Annotations[AnnotationExpiresAt], "2026-12-06T20:00:00Z"; got != want {
		t.Errorf("expires-at annotation = %q, want %q", got, want)
	}
	warm, err := d.pod(podPlan{name: "sbx-warm-a", size: "small"})
	if err != nil {
		t.Fatal(err)
	}
	if warm.Spec.ActiveDeadlineSeconds != nil || warm.Annotations[AnnotationExpiresAt] != "" {
		t.Errorf("warm pod: deadline %v, expires-at %q; want neither (PoolMaxAge bounds it)", warm.Spec.ActiveDeadlineSeconds, warm.Annotations[AnnotationExpiresAt])
	}
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName = %v, want gvisor", pod.Spec.RuntimeClassName)
	}
	if got, want := pod.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "other"}}; !cmp.Equal(got, want) {
		t.Errorf("imagePullSecrets = %v, want %v", got, want)
	}
	c := pod.Spec.Containers[0]
	if got := c.Resources.Limits.Memory().String(); got != "2Gi" {
		t.Errorf("memory limit = %s, want 2Gi (medium)", got)
	}
	ws := pod.Spec.Volumes[0]
	if ws.Name != "workspace" || ws.EmptyDir == nil || ws.EmptyDir.SizeLimit.String() != "3Gi" {
		t.Errorf("workspace volume = %+v, want an emptyDir of 3Gi", ws)
	}
	// E2B's home is the workspace again, with the volumes below it
	at := map[string]string{}
	for _, m := range c.VolumeMounts {
		at[m.MountPath] = m.Name
	}
	if at["/workspace"] != "workspace" || at["/home/user"] != "workspace" || at["/home/user/data"] != at["/workspace/data"] || at["/workspace/data"] == "" {
		t.Errorf("mounts = %v, want the workspace and its volume at /workspace and /home/user", at)
	}
	last := pod.Spec.Volumes[len(pod.Spec.Volumes)-1]
	if last.PersistentVolumeClaim == nil || last.PersistentVolumeClaim.ClaimName != "boxkite-vol-v1" {
		t.Errorf("volume = %+v, want the claim boxkite-vol-v1", last)
	}
}

// checkPodSecurity fails t unless pod has the restricted security context
// of design/ARCHITECTURE.md.
func checkPodSecurity(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken is not false")
	}
	if pod.Spec.HostNetwork || pod.Spec.HostPID || pod.Spec.HostIPC {
		t.Error("pod shares a host namespace")
	}
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		t.Errorf("hostUsers = %v, want false", pod.Spec.HostUsers)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	sc := pod.Spec.Containers[0].SecurityContext
	switch {
	case sc == nil:
		t.Fatal("no container security context")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0:
		t.Error("container may run as root")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("root filesystem is writable")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation allowed")
	case sc.Privileged != nil && *sc.Privileged:
		t.Error("privileged")
	case sc.Capabilities == nil || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0:
		t.Errorf("capabilities = %+v, want drop ALL and add none", sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("seccomp is not RuntimeDefault")
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
}

// TestVolumes: a volume is a claim of its size; deleting a gone one is fine.
func TestVolumes(t *testing.T) {
	d, cs := newFakeDriver(t, Config{StorageClass: "fast"})
	ctx := context.Background()
	if err := d.CreateVolume(ctx, "v1", 2<<30); err != nil {
		t.Fatal(err)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "boxkite-vol-v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pvc.Spec.Resources.Requests.Storage().String(); got != "2Gi" || *pvc.Spec.StorageClassName != "fast" {
		t.Errorf("claim = %s of class %s, want 2Gi of fast", got, *pvc.Spec.StorageClassName)
	}
	for range 2 {
		if err := d.DeleteVolume(ctx, "v1"); err != nil {
			t.Errorf("DeleteVolume = %v", err)
		}
	}
}

// TestPinnedTLS: the driver talks to a sidecar only if it presents exactly
// the certificate made for it.
func TestPinnedTLS(t *testing.T) {
	now := time.Now()
	mine, err := newCert("sbx-a", now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := newCert("sbx-a", now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(mine.certPEM, mine.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
		}
	}))
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	hs.StartTLS()
	defer hs.Close()
	addr := strings.TrimPrefix(hs.URL, "https://")
	ctx := context.Background()
	if err := health(ctx, model.Endpoint{Network: "tcp", Address: addr, CertPEM: mine.certPEM}); err != nil {
		t.Errorf("health with the pinned certificate: %v", err)
	}
	if err := health(ctx, model.Endpoint{Network: "tcp", Address: addr, CertPEM: other.certPEM}); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("health with another certificate pinned = %v, want a pin mismatch", err)
	}
}
