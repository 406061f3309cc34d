package kube_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMountedTokenOpensNothing: agent commands run as the sidecar's uid,
// so they can read every file the pod mounts (the test kubelet leaves a
// Secret's files as a real one does: root, group fsGroup, 0440). What they
// find there must not open the sidecar's API: the pod mounts only a boot
// token, which the driver's claim retires before any command runs; the
// sandbox's token stays in the Secret. Checked for a cold pod, a claimed
// warm pod, and a warm pod paused and resumed (a new pod, a new boot
// token). Before the fix the pod mounted the sandbox's token, and a
// command could call the sidecar with it, past the control plane's
// allowlist, budget and audit log (session 18, kube19).
func TestMountedTokenOpensNothing(t *testing.T) {
	e := newEnv(t, kube.Config{PoolSize: 1, SnapshotDir: t.TempDir()})
	e.start(t)
	runPool(t, e)
	ctx := context.Background()
	c := e.client()
	warm, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if e.driver.PoolStats().Claims != 1 {
		t.Fatalf("pool stats %+v: the first sandbox did not come from the pool", e.driver.PoolStats())
	}
	// Medium does not fit the pool's small pods: a cold start.
	cold, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "cold", Size: api.SizeMedium})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("cold", func(t *testing.T) { checkMountedToken(t, e, c, cold.ID) })
	before := checkMountedToken(t, e, c, warm.ID)
	if _, err := c.PauseSandbox(ctx, warm.ID, api.PauseFilesystem); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if _, err := c.ResumeSandbox(ctx, warm.ID); err != nil {
		t.Fatalf("resume: %v", err)
	}
	t.Run("resumed", func(t *testing.T) {
		after := checkMountedToken(t, e, c, warm.ID)
		if after == before {
			t.Error("the resumed pod mounts its last pod's boot token")
		}
		sidecarStatus(t, e, warm.ID, before, http.StatusUnauthorized)
	})
}

// checkMountedToken reads, as sandbox id's agent, the files its pod mounts
// from the sidecar's Secret, and checks that the token among them is
// refused by the sidecar while the Secret's own token is taken. It returns
// the token read.
func checkMountedToken(t *testing.T, e *env, c *client.Client, id string) string {
	t.Helper()
	ctx := context.Background()
	pod := boundPod(t, e, id)
	dir := e.kubelet.VolumeDir(pod, "sidecar")
	if dir == "" {
		t.Fatalf("pod %s does not run", pod)
	}
	res, err := c.Exec(ctx, id, api.ExecRequest{Command: "id -u; ls " + dir + "; cat " + filepath.Join(dir, "boot-token")})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("read the mounted files as the agent: %+v, %v", res, err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 5 || lines[0] != "1001" {
		t.Fatalf("agent's id and the mounted files = %q, want uid 1001 and boot-token, tls.crt, tls.key and the token", lines)
	}
	if files := lines[1:4]; !slices.Equal(files, []string{"boot-token", "tls.crt", "tls.key"}) {
		t.Errorf("the pod mounts %v, want boot-token, tls.crt and tls.key (never the sandbox's token)", files)
	}
	sec, err := e.cluster.Client.CoreV1().Secrets(e.ns).Get(ctx, pod+"-sidecar", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	read, own := lines[4], string(sec.Data["token"])
	if read == own || own == "" {
		t.Fatalf("the agent read the sandbox's token (%t) or the Secret has none", read == own)
	}
	if fi, err := os.Stat(filepath.Join(dir, "boot-token")); err != nil || fi.Mode().Perm() != 0o440 {
		t.Errorf("boot-token file: %v, %v; want 0440 as a kubelet with fsGroup leaves it", fi, err)
	}
	sidecarStatus(t, e, id, read, http.StatusUnauthorized)
	sidecarStatus(t, e, id, own, http.StatusOK)
	return read
}

// boundPod is the name of sandbox id's running pod.
func boundPod(t *testing.T, e *env, id string) string {
	t.Helper()
	pods, err := e.cluster.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: kube.LabelSandbox + "=" + id + "," + kube.LabelState + "=" + kube.StateBound,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			return p.Name
		}
	}
	t.Fatalf("no running pod of %s", id)
	return ""
}

// sidecarStatus calls GET /process on sandbox id's sidecar with token, as
// a command in the pod could over loopback, and checks the status.
func sidecarStatus(t *testing.T, e *env, id, token string, want int) {
	t.Helper()
	pod, err := e.cluster.Client.CoreV1().Pods(e.ns).Get(context.Background(), boundPod(t, e, id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(pod.Spec.Containers[0].Ports[0].ContainerPort)))
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // as `curl -k` from inside
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/process", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET /process: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("GET /process with the %d-byte token: %s, want %d", len(token), resp.Status, want)
	}
}
