package kube_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestVolumesOnKube is docs/volumes.md on the kube driver: a volume is a
// PersistentVolumeClaim of its size; a sandbox mounting it is a pod with
// the claim at the asked path; what one sandbox writes there the next
// one, mounting it elsewhere, reads; deleting the volume while a sandbox
// mounts it is 409 volume_in_use naming that sandbox; deleting it after
// deletes its claim. (The test kubelet keeps a claim's files for its
// life, as a PersistentVolume would; a size it does not enforce.)
func TestVolumesOnKube(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" { // CI runs as root
		t.Skip("the test kubelet binds a volume below the workspace as root only")
	}
	e := newEnv(t, kube.Config{})
	e.start(t)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vol, err := c.CreateVolume(ctx, api.CreateVolumeRequest{Label: "data", SizeGB: 2})
	if err != nil {
		t.Fatal(err)
	}
	claims := e.cluster.Client.CoreV1().PersistentVolumeClaims(e.ns)
	pvc, err := claims.Get(ctx, "boxkite-vol-"+vol.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the volume's claim: %v", err)
	}
	if got := pvc.Spec.Resources.Requests.Storage().String(); got != "2Gi" {
		t.Errorf("claim of %s, want 2Gi", got)
	}

	first, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{VolumeMounts: map[string]string{vol.ID: "/workspace/data"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := mustExec(t, c, first.ID, "echo kept > data/f && cat data/f"); out != "kept\n" {
		t.Fatalf("write to the volume: %q", out)
	}
	err = c.DeleteVolume(ctx, vol.ID)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeVolumeInUse || !strings.Contains(ae.Hint, first.ID) {
		t.Errorf("delete while mounted: %v, want volume_in_use naming %s", err, first.ID)
	}
	if err := c.DeleteSandbox(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	second, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{VolumeMounts: map[string]string{vol.ID: "/workspace/again"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := mustExec(t, c, second.ID, "cat again/f; ls data 2>&1 || true"); !strings.HasPrefix(out, "kept\n") || !strings.Contains(out, "No such file") {
		t.Errorf("the second sandbox reads %q, want the first's file at its own path only", out)
	}
	if err := c.DeleteSandbox(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteVolume(ctx, vol.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	// Deleted: the claim is gone, or held by its kubernetes.io/pvc-protection
	// finalizer, which no controller here removes.
	if pvc, err := claims.Get(ctx, "boxkite-vol-"+vol.ID, metav1.GetOptions{}); err == nil && pvc.DeletionTimestamp == nil {
		t.Errorf("the claim is left after the volume's delete")
	}
}
