package kube_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/kubetest"
	"github.com/boxkite/boxkite/server/kube"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tests in this file check that a sandbox's pod is held to what it
// asks for, as a node holds it: the test kubelet gives each pod's cgroup
// the container's CPU and memory limits and the node's podPidsLimit
// (kubetest.Kubelet), and starts the sidecar inside it. Before, pods ran
// without limits, and none of these could fail.

// limitedSandbox serves a control plane whose small size is limited to
// cpu and mem, on a kubelet configured by node, and creates a small
// sandbox there. It returns the env, a client, the sandbox's id and its
// pod's cgroup directories. The kubelet gives pods cgroups as root only.
func limitedSandbox(t *testing.T, cpu, mem string, node ...kubetest.KubeletOption) (*env, *client.Client, string, []string) {
	t.Helper()
	if os.Geteuid() != 0 && os.Getenv("CI") == "" { // CI runs as root
		t.Skip("the test kubelet gives pods cgroups of their own as root only")
	}
	sizes := kube.DefaultSizes()
	small := sizes[api.SizeSmall]
	small.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	small.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	sizes[api.SizeSmall] = small
	e := newEnv(t, kube.Config{Sizes: sizes}, node...)
	e.start(t)
	c := e.client()
	sb, err := c.CreateSandbox(context.Background(), api.CreateSandboxRequest{Size: api.SizeSmall})
	if err != nil {
		t.Fatal(err)
	}
	return e, c, sb.ID, e.podCgroup(t, sb.ID)
}

// podCgroup returns the cgroup directories of sandbox id's pod.
func (e *env) podCgroup(t *testing.T, id string) []string {
	t.Helper()
	pods, err := e.cluster.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + id})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the pod of %s: %v, %v", id, pods, err)
	}
	dirs := e.kubelet.CgroupDirs(pods.Items[0].Name)
	if len(dirs) == 0 {
		t.Fatalf("the pod %s has no cgroup of its own", pods.Items[0].Name)
	}
	return dirs
}

// cgroupStat reads key of the flat keyed file name (cpu.stat,
// memory.events, pids.events) in whichever of dirs has it.
func cgroupStat(dirs []string, name, key string) (int64, error) {
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, name))
		if err != nil {
			continue
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, fmt.Errorf("%s in %s has no %s", name, d, key)
	}
	return 0, fmt.Errorf("no %s in %v", name, dirs)
}

// cgroupValue reads the single number of file name (pids.peak) in
// whichever of dirs has it.
func cgroupValue(dirs []string, name string) (int64, error) {
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, name)); err == nil {
			return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %v", name, dirs)
}

// TestPodMemoryLimit: a command that allocates past its sandbox's memory
// limit is OOM-killed in its pod's cgroup and its exec reports it as the
// local driver's does (exit 137 and stop_reason memory_limit,
// internal/securitytest's TestMemoryHog); the sidecar survives it. A
// kill -9 after it is a plain 137, also for a restarted server (a new
// driver): the kill pinned on the hog is on the pod's annotation, not in
// the first server's memory. Before, a kube exec never had the reason.
func TestPodMemoryLimit(t *testing.T) {
	const limit = 256 << 20
	e, c, id, dirs := limitedSandbox(t, "1", "256Mi")
	ctx := context.Background()
	cmd := fmt.Sprintf(`python3 -c 'b = b"x" * %d; print("survived")'`, 4*limit)
	res, err := c.Exec(ctx, id, api.ExecRequest{Command: cmd, Timeout: 120})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 128+int(syscall.SIGKILL) || strings.Contains(res.Stdout, "survived") {
		t.Errorf("a command allocating %d MiB in a sandbox of %d MiB = %+v, want it killed (exit 137)", 4*limit>>20, limit>>20, res)
	}
	if res.StopReason != api.StopReasonMemoryLimit {
		t.Errorf("the memory hog's stop_reason = %q, want %q", res.StopReason, api.StopReasonMemoryLimit)
	}
	oom, err := cgroupStat(dirs, "memory.events", "oom_kill") // cgroup v2
	if err != nil {
		oom, err = cgroupStat(dirs, "memory.oom_control", "oom_kill") // v1
	}
	if err != nil || oom == 0 {
		t.Errorf("the pod's cgroup recorded %d OOM kills (%v), want the command's", oom, err)
	}
	if out := mustExec(t, c, id, "echo alive"); out != "alive\n" {
		t.Errorf("the sandbox after the OOM kill said %q", out)
	}
	if res, err := c.Exec(ctx, id, api.ExecRequest{Command: "kill -9 $$", Timeout: 30}); err != nil || res.ExitCode != 137 || res.StopReason != "" {
		t.Errorf("kill -9 after the OOM kill = %+v, %v; want exit 137 without a stop_reason", res, err)
	}
	restarted, err := kube.New(e.cluster.Client, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Release()
	if killed, err := restarted.MemoryKilled(ctx, id); err != nil || killed {
		t.Errorf("a restarted server's MemoryKilled after the kill was pinned = %v, %v; want false", killed, err)
	}
	res, err = c.ExecStreamResult(ctx, id, api.ExecRequest{Command: cmd, Timeout: 120}, func(api.ExecEvent) error { return nil })
	if err != nil || res.ExitCode != 137 || res.StopReason != api.StopReasonMemoryLimit {
		t.Errorf("a streamed memory hog = %+v, %v; want exit 137 and stop_reason %q", res, err, api.StopReasonMemoryLimit)
	}
}

// TestPodPidsLimit: a fork bomb in a sandbox stops at its node's pids
// limit (pids.max refuses its forks), and the sandbox runs commands
// again once the bomb's command is killed at its timeout.
func TestPodPidsLimit(t *testing.T) {
	const limit = 256
	_, c, id, dirs := limitedSandbox(t, "1", "1Gi", kubetest.PodPidsLimit(limit))
	ctx := context.Background()
	res, err := c.Exec(ctx, id, api.ExecRequest{Command: "bash -c 'f() { f | f & }; f; sleep 10'", Timeout: 5})
	if err != nil {
		t.Fatalf("exec the bomb: %v", err)
	}
	t.Logf("bomb: exit %d after %d ms", res.ExitCode, res.DurationMS)
	refused, err := cgroupStat(dirs, "pids.events", "max")
	if err != nil || refused == 0 {
		t.Errorf("the pod's pids limit refused %d forks (%v), want the bomb's", refused, err)
	}
	peak, err := cgroupValue(dirs, "pids.peak")
	if err != nil || peak > limit {
		t.Errorf("the pod peaked at %d tasks (%v), want at most its limit %d", peak, err, limit)
	}
	t.Logf("the bomb peaked at %d tasks; pids.max refused %d forks", peak, refused)
	var last error
	waitFor(t, "the bombed sandbox to run true", func() bool {
		res, err := c.Exec(ctx, id, api.ExecRequest{Command: "true", Timeout: 5})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
		}
		if err != nil && err.Error() != fmt.Sprint(last) {
			t.Logf("the bombed sandbox: %v", err)
		}
		last = err
		return err == nil
	})
}

// TestPodCPUQuota: a sandbox limited to a tenth of a CPU that spins two
// busy loops is throttled, and the CPU time its stats count is what the
// quota allows over the periods its cgroup ran (cpu.stat's nr_periods),
// counted by the kernel rather than timed: at most 10 ms a period, where
// two loops unlimited could take up to 200 ms of this machine's two
// cores. Without a quota the cgroup counts no periods and no throttling.
func TestPodCPUQuota(t *testing.T) {
	const quota = 10_000 // µs a 100 ms period, of 100m
	e, c, id, dirs := limitedSandbox(t, "100m", "1Gi")
	ctx := context.Background()
	stat := func(key string) int64 {
		t.Helper()
		n, err := cgroupStat(dirs, "cpu.stat", key)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cpu := func() int64 {
		t.Helper()
		st, err := e.driver.Stats(ctx, id)
		if err != nil || st.CPUMicros <= 0 {
			t.Fatalf("stats: %+v, %v; want the CPU time used", st, err)
		}
		return st.CPUMicros
	}
	// The periods bracket the CPU time read between them.
	periods0, throttled0 := stat("nr_periods"), stat("nr_throttled")
	cpu0 := cpu()
	spin, err := c.StartProcess(ctx, id, api.ProcessStartRequest{Command: "while :; do :; done & while :; do :; done", MaxRuntimeSeconds: 600})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.StopProcess(ctx, id, spin.ProcessID) }()
	var used int64
	waitForLong(t, "half a second of the busy loops' CPU time, throttled", 8*time.Minute, func() bool {
		used = cpu() - cpu0
		return used >= 500_000 && stat("nr_throttled") > throttled0
	})
	periods := stat("nr_periods") - periods0
	t.Logf("%d µs of CPU time in %d periods, %d of them throttled", used, periods, stat("nr_throttled")-throttled0)
	// Slack: each CPU may overrun a period by a scheduler tick (4 ms
	// at HZ=250) before it is throttled.
	if allowed := periods*quota*5/4 + 20_000; used > allowed {
		t.Errorf("the sandbox used %d µs of CPU time in %d periods of its quota, want at most %d (%d µs a period)", used, periods, allowed, quota)
	}
}
