package kube_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestPodMasksDiskstats: a command in a sandbox pod reads nothing from
// /proc/diskstats, which lists the node's block devices with their I/O
// counters: every other pod's disk writes as they happen (finding 32).
// The runtime's default masks leave it; the pod mounts an empty file
// over it, which the test kubelet binds as a runtime does (as root).
func TestPodMasksDiskstats(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" { // CI runs as root
		t.Skip("the test kubelet mounts over /proc as root only")
	}
	e := newEnv(t, kube.Config{})
	e.start(t)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustExec(t, c, sb.ID, "cat /proc/diskstats | wc -c"); got != "0\n" {
		t.Errorf("/proc/diskstats in a pod has %q bytes, want 0", got)
	}
	// The host's, next to it, is not empty: the mask is the pod's.
	if b, err := os.ReadFile("/proc/diskstats"); err != nil || len(b) == 0 {
		t.Fatalf("the host's /proc/diskstats: %d bytes, %v", len(b), err)
	}
}
