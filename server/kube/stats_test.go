package kube_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestStatsOnKube: the kube driver reports a sandbox's use, read by its
// pod's sidecar from the cgroup it runs in (GET /usage): /v1's stats
// have its memory, and E2B's getMetrics its memory and CPU use, which
// grows while a command spins. Before, stats answered not_supported
// and getMetrics 0. (The test kubelet runs each sidecar in the test's
// own cgroup: the numbers are real, not the pod's alone.)
func TestStatsOnKube(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Size: api.SizeSmall})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.SandboxStats(ctx, sb.ID)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if st.MemoryBytes <= 0 {
		t.Errorf("stats %+v, want the memory held", st)
	}

	type metric struct {
		CPUCount   int     `json:"cpuCount"`
		CPUUsedPct float64 `json:"cpuUsedPct"`
		MemUsed    int64   `json:"memUsed"`
	}
	metrics := func() metric {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/sandboxes/"+sb.ID+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-API-Key", e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got []metric
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || len(got) != 1 {
			t.Fatalf("getMetrics: %d, %v, %+v", resp.StatusCode, err, got)
		}
		return got[0]
	}
	spin, err := c.StartProcess(ctx, sb.ID, api.ProcessStartRequest{Command: "while :; do :; done", MaxRuntimeSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.StopProcess(ctx, sb.ID, spin.ProcessID) }()
	var m metric
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if m = metrics(); m.CPUUsedPct > 0 && m.MemUsed > 0 {
			break
		}
	}
	if m.CPUUsedPct <= 0 || m.CPUUsedPct > 100 || m.MemUsed <= 0 || m.CPUCount < 1 {
		t.Errorf("getMetrics %+v, want CPU use and memory", m)
	}
}
