package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
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

// TestProcMasked: on the cluster's default runtime a pod mounts its
// Secret's empty file over /proc/diskstats, read-only, and the Secret has
// it; with a RuntimeClass (a kernel of the runtime's own) it mounts
// nothing inside /proc.
func TestProcMasked(t *testing.T) {
	for _, class := range []string{"", "gvisor"} {
		d, _ := newFakeDriver(t, Config{RuntimeClassName: class})
		pod, err := d.pod(podPlan{name: "sbx-x", sandbox: "x", size: api.SizeSmall})
		if err != nil {
			t.Fatal(err)
		}
		var inProc []corev1.VolumeMount
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			if strings.HasPrefix(m.MountPath, "/proc") {
				inProc = append(inProc, m)
			}
		}
		if class != "" {
			if len(inProc) != 0 {
				t.Errorf("runtime class %s: mounts in /proc %+v, want none", class, inProc)
			}
			continue
		}
		want := []corev1.VolumeMount{{Name: "masks", MountPath: "/proc/diskstats", SubPath: emptyKey, ReadOnly: true}}
		if !cmp.Equal(inProc, want) {
			t.Errorf("mounts in /proc = %+v, want %+v", inProc, want)
		}
		var masks *corev1.SecretVolumeSource
		for _, v := range pod.Spec.Volumes {
			if v.Name == "masks" {
				masks = v.Secret
			}
		}
		if masks == nil || masks.SecretName != secretName("sbx-x") || !cmp.Equal(masks.Items, []corev1.KeyToPath{{Key: emptyKey, Path: emptyKey}}) {
			t.Errorf("masks volume = %+v, want the pod's Secret's %s", masks, emptyKey)
		}
		sec := d.secret(podPlan{name: "sbx-x"}, "t", "b", &certPair{})
		if v, ok := sec.Data[emptyKey]; !ok || len(v) != 0 {
			t.Errorf("secret's %s = %q (present %v), want empty", emptyKey, v, ok)
		}
	}
}
