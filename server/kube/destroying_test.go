package kube_test

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestDeleteCutBeforeRecorded: a delete whose pod the driver removed is
// cut before the row is written (the store closes at that instant, as a
// crash there would leave it). The next start finishes the removal: the
// sandbox is destroyed (deleted), not lost, and its pod and Secret are
// gone.
func TestDeleteCutBeforeRecorded(t *testing.T) {
	e := newEnv(t, kube.Config{})
	var target atomic.Value
	target.Store("")
	e.srvCfg.AfterTeardownForTests = func(id string) {
		if target.CompareAndSwap(id, "") { // once: not again when the restart finishes it
			e.st.Close()
		}
	}
	e.start(t)
	ctx := context.Background()
	c := e.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	target.Store(sb.ID)
	if err := c.DeleteSandbox(ctx, sb.ID); err == nil {
		t.Fatal("delete answered 2xx though its row could not be written")
	}

	e.restart(t)
	c = e.client()
	got, err := c.Sandbox(ctx, sb.ID)
	if err != nil || got.Status != api.StatusDestroyed || got.DestroyReason != "deleted" {
		t.Fatalf("sandbox deleted before the crash, after the restart = %+v, %v, want destroyed (deleted)", got, err)
	}
	pods, err := e.cluster.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + sb.ID})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods of the destroyed sandbox: %d, %v; want none", len(pods.Items), err)
	}
	if _, err := e.cluster.Client.CoreV1().Secrets(e.ns).Get(ctx, "sbx-"+sb.ID+"-sidecar", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("destroyed sandbox's secret: %v, want not found", err)
	}
}
