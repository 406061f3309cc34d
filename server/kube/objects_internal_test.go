package kube

import (
	"slices"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	corev1 "k8s.io/api/core/v1"
)

// TestPodMountsNoSandboxToken: a pod's Secret volume projects the boot
// token and the TLS pair only, its sidecar reads the boot token and
// serves /claim, for a cold pod and a warm one alike (finding 26).
func TestPodMountsNoSandboxToken(t *testing.T) {
	d, _ := newFakeDriver(t, Config{})
	for _, sandbox := range []string{"", "abc"} {
		pod, err := d.pod(podPlan{name: "sbx-x", sandbox: sandbox, size: api.SizeSmall})
		if err != nil {
			t.Fatal(err)
		}
		var items []corev1.KeyToPath
		for _, v := range pod.Spec.Volumes {
			if v.Secret != nil {
				items = append(items, v.Secret.Items...)
				if len(v.Secret.Items) == 0 {
					t.Errorf("secret volume %s projects every key", v.Name)
				}
			}
		}
		for _, it := range items {
			if it.Key == tokenKey {
				t.Errorf("sandbox %q: the pod mounts the sandbox's token as %s", sandbox, it.Path)
			}
		}
		c := pod.Spec.Containers[0]
		if !slices.Contains(c.Args, "--claimable") {
			t.Errorf("sandbox %q: sidecar args %v lack --claimable", sandbox, c.Args)
		}
		if !slices.Contains(c.Env, corev1.EnvVar{Name: "BOXKITE_SIDECAR_TOKEN_FILE", Value: tlsDir + "/" + bootTokenKey}) {
			t.Errorf("sandbox %q: sidecar env %v does not name the boot token", sandbox, c.Env)
		}
	}
}

// TestClaimable: a paused pod an older server kept without --claimable
// gets it back for Resume's claim; one that has it is left as it is.
func TestClaimable(t *testing.T) {
	args := []string{"serve", "--workspace", "/workspace"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar", Args: args}}}
	got := claimable(spec)
	if want := append(slices.Clone(args), "--claimable"); !slices.Equal(got.Containers[0].Args, want) {
		t.Errorf("claimable args = %v, want %v", got.Containers[0].Args, want)
	}
	if !slices.Equal(spec.Containers[0].Args, args) {
		t.Errorf("claimable changed its argument's args: %v", spec.Containers[0].Args)
	}
	if again := claimable(got); !slices.Equal(again.Containers[0].Args, got.Containers[0].Args) {
		t.Errorf("claimable twice = %v", again.Containers[0].Args)
	}
}
