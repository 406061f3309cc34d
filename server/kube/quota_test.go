package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestQuotaRefusal: a create the API server refuses for the sandbox
// namespace's ResourceQuota (the chart's sandboxes.resourceQuota) is
// 503 host_capacity naming the quota and its resource, not 502
// sandbox_failed asking to retry, and leaves nothing behind; a volume's
// claim likewise.
func TestQuotaRefusal(t *testing.T) {
	e := newEnv(t, kube.Config{})
	ctx := context.Background()
	quotas := e.cluster.Client.CoreV1().ResourceQuotas(e.ns)
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("0")}
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxes"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No controller-manager here computes its status; admission needs it.
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("0"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("0"),
	}}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.start(t)
	c := e.client()
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil {
		t.Fatalf("first create, within the quota: %v", err)
	}
	_, err = c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	ae, ok := errors.AsType[*api.Error](err)
	if !ok || ae.Status != 503 || ae.Code != api.CodeHostCapacity {
		t.Fatalf("create over the quota: %v, want 503 host_capacity", err)
	}
	d, _ := ae.Details.(map[string]any)
	if d["resource"] != kube.QuotaResource+"pods" || d["used"] != float64(1) || d["limit"] != float64(1) {
		t.Errorf("details %v, want resource quota/pods, used 1, limit 1", ae.Details)
	}
	if !strings.Contains(ae.Hint, "ResourceQuota sandboxes") {
		t.Errorf("hint %q does not name the quota", ae.Hint)
	}
	_, err = c.CreateVolume(ctx, api.CreateVolumeRequest{})
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeHostCapacity || !strings.Contains(ae.Message, "quota/persistentvolumeclaims") {
		t.Errorf("volume create over the quota: %v, want 503 host_capacity for quota/persistentvolumeclaims", err)
	}
	sbs, err := c.ListSandboxes(ctx, true)
	if err != nil || len(sbs) != 1 {
		t.Errorf("sandboxes after the refusal: %d, %v; want the first only", len(sbs), err)
	}
	// The refused create's Secret and policy were removed.
	mine := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy}
	secs, err := e.cluster.Client.CoreV1().Secrets(e.ns).List(ctx, mine)
	if err != nil {
		t.Fatal(err)
	}
	pols, err := e.cluster.Client.NetworkingV1().NetworkPolicies(e.ns).List(ctx, mine)
	if err != nil {
		t.Fatal(err)
	}
	if len(secs.Items) != 1 || len(pols.Items) != 1 {
		t.Errorf("%d secrets, %d network policies after the refusal; want the first sandbox's only", len(secs.Items), len(pols.Items))
	}
}
