package e2b

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// metricsPlane is a ControlPlane with one sandbox and its use.
type metricsPlane struct {
	ControlPlane
	sb Sandbox
	u  Usage
}

func (p metricsPlane) Sandbox(context.Context, Caller, string) (Sandbox, error) { return p.sb, nil }

func (p metricsPlane) Usage(context.Context, Caller, string) (Usage, bool, error) {
	return p.u, true, nil
}

// TestMetricsDisk: getMetrics reports the disk's use and size as the
// driver accounts for them (diskUsed was always 0, and diskTotal 0 unless
// the create asked for storage), else the sandbox's storage as its size.
func TestMetricsDisk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		storageGB       float64
		u               Usage
		wantUsed, total int64
	}{
		{"the driver's disk", 0, Usage{MemoryBytes: 1 << 20, DiskUsedBytes: 32 << 10, DiskTotalBytes: 5 << 30}, 32 << 10, 5 << 30},
		{"no disk of its own", 2, Usage{MemoryBytes: 1 << 20}, 0, 2 << 30},
	}
	for _, tt := range tests {
		h := &Handler{cp: metricsPlane{sb: Sandbox{Size: api.SizeSmall, StorageGB: tt.storageGB}, u: tt.u}, now: time.Now}
		w := httptest.NewRecorder()
		if err := h.metrics(w, httptest.NewRequest(http.MethodGet, "/sandboxes/x/metrics", nil), nil); err != nil {
			t.Fatal(err)
		}
		var got []metricJSON
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 1 {
			t.Fatalf("%s: %q: %v", tt.name, w.Body, err)
		}
		if m := got[0]; m.DiskUsed != tt.wantUsed || m.DiskTotal != tt.total || m.MemUsed != 1<<20 || m.CPUCount != 1 {
			t.Errorf("%s: %+v, want disk %d of %d", tt.name, m, tt.wantUsed, tt.total)
		}
	}
}

// TestWriteErrorValidation400: a request the facade refuses as /v1 does
// (422 there) is 400 with code 400, as E2B answers one (SandboxError with
// statusCode 400); it was 422.
func TestWriteErrorValidation400(t *testing.T) {
	t.Parallel()
	h := &Handler{}
	zero := 0
	w := httptest.NewRecorder()
	h.writeError(w, httptest.NewRequest(http.MethodPost, "/sandboxes", nil), validateCreate(newSandbox{Timeout: &zero}))
	var body errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusBadRequest || body.Code != http.StatusBadRequest ||
		!strings.Contains(body.Message, "timeout must be at least 1 second") {
		t.Errorf("answer %d %q, want 400 {code: 400} with the message", w.Code, w.Body)
	}
}

// cpuPlane is a ControlPlane whose sandbox used perReading µs of CPU
// between two readings of its use, perReading µs of its clock apart.
type cpuPlane struct {
	metricsPlane
	clock      *time.Time
	used       *int64
	perReading int64
}

func (p cpuPlane) Usage(context.Context, Caller, string) (Usage, bool, error) {
	*p.used += p.perReading / 2
	*p.clock = p.clock.Add(time.Duration(p.perReading) * time.Microsecond)
	return Usage{MemoryBytes: 1 << 20, CPUMicros: *p.used}, true, nil
}

// TestMetricsCPU: getMetrics' cpuUsedPct is the share of the sandbox's
// CPUs its processes used between two readings of its CPU time (it was
// always 0): half a CPU of a one-CPU sandbox is 50, of two 25; a driver
// without CPU accounting answers 0 without waiting.
func TestMetricsCPU(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		size string
		want float64
	}{{api.SizeSmall, 50}, {api.SizeMedium, 25}} {
		clock, used := time.Unix(1000, 0), int64(1)
		var slept time.Duration
		h := &Handler{
			cp:  cpuPlane{metricsPlane: metricsPlane{sb: Sandbox{Size: tt.size}}, clock: &clock, used: &used, perReading: 1_000_000},
			now: func() time.Time { return clock },
			sleep: func(_ context.Context, d time.Duration) error {
				slept += d
				return nil
			},
		}
		w := httptest.NewRecorder()
		if err := h.metrics(w, httptest.NewRequest(http.MethodGet, "/sandboxes/x/metrics", nil), nil); err != nil {
			t.Fatal(err)
		}
		var got []metricJSON
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 1 {
			t.Fatalf("%q: %v", w.Body, err)
		}
		if got[0].CPUUsedPct != tt.want || slept != cpuWindow {
			t.Errorf("%s: cpuUsedPct %v after waiting %v, want %v after %v", tt.size, got[0].CPUUsedPct, slept, tt.want, cpuWindow)
		}
	}
	h := &Handler{
		cp: metricsPlane{sb: Sandbox{Size: api.SizeSmall}, u: Usage{MemoryBytes: 1}}, now: time.Now,
		sleep: func(context.Context, time.Duration) error { t.Error("waited without CPU accounting"); return nil },
	}
	if err := h.metrics(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/sandboxes/x/metrics", nil), nil); err != nil {
		t.Fatal(err)
	}
}
