package e2b

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// samplerPlane is a ControlPlane whose one-CPU sandboxes used *used µs of
// CPU so far, or are gone when gone is set.
type samplerPlane struct {
	metricsPlane
	used *int64
	gone *bool
}

func (p samplerPlane) Usage(context.Context, Caller, string) (Usage, bool, error) {
	if *p.gone {
		return Usage{}, false, ErrNotFound
	}
	return Usage{MemoryBytes: 1 << 20, CPUMicros: *p.used}, true, nil
}

// TestMetricsCPUSampler: a call measures the CPU use against the previous
// call's reading when that is 0.25 s to a minute old, without waiting
// (every call waited 0.25 s before); the first call, and one after a
// minute, waits the whole 0.25 s; one 0.1 s after the previous waits the
// other 0.15 s. The readings of sandboxes gone, killed or not asked about
// for a while are dropped.
func TestMetricsCPUSampler(t *testing.T) {
	t.Parallel()
	clock, used, gone := time.Unix(1000, 0), int64(1), false
	var slept time.Duration
	h := &Handler{
		cp:  samplerPlane{metricsPlane: metricsPlane{sb: Sandbox{Size: api.SizeSmall}}, used: &used, gone: &gone},
		now: func() time.Time { return clock },
		sleep: func(_ context.Context, d time.Duration) error {
			slept += d
			clock = clock.Add(d)
			used += d.Microseconds() / 2 // half a CPU while it waits
			return nil
		},
	}
	get := func(id string) (float64, error) {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "/sandboxes/"+id+"/metrics", nil)
		r.SetPathValue("id", id)
		w := httptest.NewRecorder()
		if err := h.metrics(w, r, nil); err != nil {
			return 0, err
		}
		var got []metricJSON
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 1 {
			t.Fatalf("%q: %v", w.Body, err)
		}
		return got[0].CPUUsedPct, nil
	}
	type call struct {
		Pct   float64
		Slept time.Duration
	}
	for _, step := range []struct {
		name      string
		gap       time.Duration // since the previous call
		usedInGap int64         // µs of CPU used in it
		want      call
	}{
		{"first", 0, 0, call{50, cpuWindow}},
		{"0.3 s later", 300 * time.Millisecond, 300_000, call{100, 0}},
		{"0.1 s later", 100 * time.Millisecond, 0, call{30, 150 * time.Millisecond}}, // 75 ms of CPU over 250 ms
		{"10 s later", 10 * time.Second, 1_000_000, call{10, 0}},
		{"2 min later", 2 * time.Minute, 60_000_000, call{50, cpuWindow}},
	} {
		clock, used, slept = clock.Add(step.gap), used+step.usedInGap, 0
		pct, err := get("a")
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if diff := cmp.Diff(step.want, call{pct, slept}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step.name, diff)
		}
	}
	if n := h.cpu.len(); n != 1 {
		t.Errorf("%d readings kept after asking about one sandbox, want 1", n)
	}

	gone = true
	if _, err := get("a"); err == nil {
		t.Fatal("metrics of a sandbox gone: no error")
	}
	if n := h.cpu.len(); n != 0 {
		t.Errorf("%d readings kept after the sandbox went, want 0", n)
	}
	gone = false
	for _, id := range []string{"b", "c"} {
		if _, err := get(id); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(2 * cpuSampleMaxAge)
	if _, err := get("d"); err != nil {
		t.Fatal(err)
	}
	if n := h.cpu.len(); n != 1 {
		t.Errorf("%d readings kept, want 1: those older than %v dropped", n, cpuSampleMaxAge)
	}
	r := httptest.NewRequest(http.MethodDelete, "/sandboxes/d", nil)
	r.SetPathValue("id", "d")
	h.cp = killPlane{h.cp}
	if err := h.kill(httptest.NewRecorder(), r, nil); err != nil {
		t.Fatal(err)
	}
	if n := h.cpu.len(); n != 0 {
		t.Errorf("%d readings kept after the kill, want 0", n)
	}
}

// killPlane destroys any sandbox.
type killPlane struct{ ControlPlane }

func (killPlane) Destroy(context.Context, Caller, string) error { return nil }
