package kubetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/sidecar/jail"
	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodLimits: a pod's cgroup limits are a kubelet's for it
// (ResourceConfigForPod): its container's CPU and memory limits, each
// only when set, whatever its requests, and the node's podPidsLimit.
func TestPodLimits(t *testing.T) {
	res := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	for _, tc := range []struct {
		name     string
		requests corev1.ResourceList
		limits   corev1.ResourceList
		pids     int64
		want     jail.Limits
	}{
		{"none (BestEffort)", nil, nil, 0, jail.Limits{}},
		{"limits", res("cpu", "250m"), res("cpu", "2", "memory", "1Gi"), 0, jail.Limits{CPUs: 2, Memory: 1 << 30}},
		{"milli-CPUs", nil, res("cpu", "100m"), 0, jail.Limits{CPUs: 0.1}},
		{"memory only", res("memory", "256Mi"), res("memory", "512Mi"), 0, jail.Limits{Memory: 512 << 20}},
		{"requests alone", res("cpu", "1", "memory", "1Gi"), nil, 0, jail.Limits{}},
		{"podPidsLimit", nil, res("memory", "64Mi"), 512, jail.Limits{Memory: 64 << 20, Pids: 512}},
		{"podPidsLimit -1 (none)", nil, nil, -1, jail.Limits{}},
		{"ephemeral storage", nil, res("ephemeral-storage", "1Gi"), 0, jail.Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Resources: corev1.ResourceRequirements{Requests: tc.requests, Limits: tc.limits},
			}}}}
			if diff := cmp.Diff(tc.want, podLimits(pod, tc.pids)); diff != "" {
				t.Errorf("podLimits (-want +got):\n%s", diff)
			}
		})
	}
}

// startScript is a stand-in container: as its first step it writes its
// own cgroups and open descriptors to $OUT, then exits.
const startScript = `#!/bin/sh
{ cat /proc/$$/cgroup; echo; ls -l /proc/$$/fd; } >"$OUT"
`

// TestPodStartsInItsCgroup: a pod's container process is in its pod's
// cgroup, in every hierarchy, before the container's first instruction,
// with the pod's limits already set, and none of the descriptors that
// placed it is left open. (Before, the kubelet moved the process just
// after it started, and the cgroup had no limits.)
func TestPodStartsInItsCgroup(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" { // CI runs as root
		t.Skip("the test kubelet gives pods cgroups of their own as root only")
	}
	// Not t.TempDir, whose parent only root may enter.
	tmp := func() string {
		d, err := os.MkdirTemp("", "kubelet-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	dir := tmp()
	script := filepath.Join(dir, "container")
	if err := os.WriteFile(script, []byte(startScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // the container's user writes OUT there
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cgs, err := podCgroups()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removePodCgroupParents(cgs) })
	k := &Kubelet{sidecar: script, dir: tmp(), cgroups: cgs, pids: 64, logf: t.Logf}
	_ = os.Chmod(k.dir, 0o755)
	uid := int64(1001)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "placed", UID: "placed-test"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid},
			Containers: []corev1.Container{{
				Ports: []corev1.ContainerPort{{ContainerPort: 8443}},
				Env:   []corev1.EnvVar{{Name: "OUT", Value: out}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
	}
	if err := os.MkdirAll(filepath.Join(k.dir, pod.Name+"-"+string(pod.UID)), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := k.launch(pod)
	if err != nil {
		t.Fatal(err)
	}
	<-p.exit
	dirs := slices.Clone(p.cg.Dirs)
	limits := map[string]string{}
	for _, d := range dirs {
		for _, f := range []string{"memory.max", "memory.limit_in_bytes", "pids.max", "cpu.max", "cpu.cfs_quota_us"} {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				limits[f] = strings.TrimSpace(string(b))
			}
		}
	}
	p.kill()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the container wrote nothing: %v", err)
	}
	got := string(b)
	cgroups, fds, _ := strings.Cut(got, "\n\n")
	var in int
	for _, line := range strings.Split(cgroups, "\n") {
		if strings.HasSuffix(line, "/"+podCgroupParent+"/kubetest-"+string(pod.UID)) {
			in++
		}
	}
	if in != len(dirs) || in == 0 {
		t.Errorf("the container started in %d of its pod's %d cgroups:\n%s\nwant all of %v", in, len(dirs), cgroups, dirs)
	}
	if strings.Contains(fds, "cgroup") {
		t.Errorf("the container started with a cgroup descriptor open:\n%s", fds)
	}
	want := map[string]string{"pids.max": "64"}
	if _, ok := limits["memory.max"]; ok { // cgroup v2
		want["memory.max"], want["cpu.max"] = strconv.Itoa(64<<20), "50000 100000"
	} else {
		want["memory.limit_in_bytes"], want["cpu.cfs_quota_us"] = strconv.Itoa(64<<20), "50000"
	}
	if diff := cmp.Diff(want, limits); diff != "" {
		t.Errorf("the pod cgroup's limits (-want +got):\n%s", diff)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the pod's cgroup %s outlived it (%v)", d, err)
		}
	}
}

// TestProcMounts: a pod's mount over a file of /proc that runc allows
// shows in its process's /proc, read-only, and not in the test's; one
// runc refuses fails the pod's start as runc fails the container's.
func TestProcMounts(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" { // CI runs as root
		t.Skip("the test kubelet mounts over /proc as root only")
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "wc -c </proc/diskstats; echo x >/proc/diskstats 2>/dev/null || echo read-only")
	var out strings.Builder
	cmd.Stdout = &out
	exited := make(chan struct{})
	if err := startAndWait(cmd, map[string]bind{"/proc/diskstats": {src: empty}}, func() { close(exited) }); err != nil {
		t.Fatal(err)
	}
	<-exited
	if got := out.String(); got != "0\nread-only\n" {
		t.Errorf("the pod's /proc/diskstats: %q, want empty and read-only", got)
	}
	if b, err := os.ReadFile("/proc/diskstats"); err != nil || len(b) == 0 {
		t.Errorf("the test's /proc/diskstats: %d bytes, %v; want the host's", len(b), err)
	}

	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 8443}},
			VolumeMounts: []corev1.VolumeMount{{Name: "m", MountPath: "/proc/partitions", SubPath: "empty"}},
		}},
		Volumes: []corev1.Volume{{Name: "m", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	pod.Name, pod.UID = "refused", "u1"
	k := &Kubelet{dir: t.TempDir(), sidecar: "/bin/true", logf: t.Logf}
	if _, err := k.launch(pod); err == nil || !strings.Contains(err.Error(), "inside /proc") {
		t.Errorf("a pod mounting /proc/partitions: %v, want runc's refusal", err)
	}
}
