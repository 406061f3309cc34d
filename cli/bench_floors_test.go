package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func msSamples(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestNewPhaseRatios(t *testing.T) {
	tests := []struct {
		name               string
		op, spawn, bwrapMS []float64
		want               *phaseRatios
	}{
		{
			name: "constant samples: the interval is the point",
			op:   []float64{10, 10, 10, 10}, spawn: []float64{2, 2, 2}, bwrapMS: []float64{20, 20},
			want: &phaseRatios{
				Phase: "p", SpawnP50MS: 2, P50VsSpawn: 5, P50SpawnCI: &[2]float64{5, 5}, P95VsSpawn: 5, P99VsSpawn: 5,
				BwrapP50MS: ptr(20.0), P50VsBwrap: ptr(0.5), P50BwrapCI: &[2]float64{0.5, 0.5}, P95VsBwrap: ptr(0.5), P99VsBwrap: ptr(0.5),
			},
		},
		{
			name: "percentiles over the phase's F p50, no bwrap",
			op:   []float64{3, 4, 5, 6, 30}, spawn: []float64{2, 2, 2, 2, 2},
			want: &phaseRatios{Phase: "p", SpawnP50MS: 2, P50VsSpawn: 2.5, P95VsSpawn: 15, P99VsSpawn: 15},
		},
		{name: "no floor in the phase", op: []float64{3}, spawn: nil, want: nil},
		{name: "no samples", op: nil, spawn: []float64{2}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newPhaseRatios("p", msSamples(tt.op...), msSamples(tt.spawn...), msSamples(tt.bwrapMS...))
			// The intervals of varied samples are checked by TestRatioCI.
			var opts []cmp.Option
			if tt.want != nil && tt.want.P50SpawnCI == nil {
				opts = append(opts, cmpopts.IgnoreFields(phaseRatios{}, "P50SpawnCI", "P50BwrapCI"))
			}
			if diff := cmp.Diff(tt.want, got, opts...); diff != "" {
				t.Errorf("newPhaseRatios (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRatioCI(t *testing.T) {
	tests := []struct {
		name      string
		op, floor []float64
		want      *[2]float64 // nil with check: only the bounds' properties
		check     bool
	}{
		{name: "constant", op: []float64{8, 8, 8}, floor: []float64{2, 2}, want: &[2]float64{4, 4}},
		{name: "one sample each", op: []float64{9}, floor: []float64{3}, want: &[2]float64{3, 3}},
		{name: "no floor", op: []float64{9}, floor: nil, want: nil},
		{name: "no samples", op: nil, floor: []float64{3}, want: nil},
		{name: "spread", op: []float64{4, 5, 5, 6, 6, 6, 7, 7, 8, 12, 30}, floor: []float64{1.8, 2, 2, 2.1, 2.2, 2.9}, check: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, fl := msSamples(tt.op...), msSamples(tt.floor...)
			got := ratioCI(op, fl)
			if !tt.check {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("ratioCI (-want +got):\n%s", diff)
				}
				return
			}
			point := summarize(op, summarize(fl, 0, 0).P50MS, 0).P50VsSpawn
			if got == nil || got[0] > point || got[1] < point || got[0] >= got[1] {
				t.Errorf("ratioCI = %v; want a proper interval around the point %v", got, point)
			}
			// Smallest and largest possible ratio of medians bound it.
			if lo, hi := 4/2.9, 30/1.8; got[0] < round3(lo) || got[1] > round3(hi) {
				t.Errorf("ratioCI = %v; outside [%v, %v]", got, lo, hi)
			}
			if again := ratioCI(op, fl); !cmp.Equal(got, again) {
				t.Errorf("ratioCI not reproducible: %v then %v", got, again)
			}
		})
	}
}

// TestResampledPercentile: the percentile of a resample is one of the
// samples, and of a single sample that sample.
func TestResampledPercentile(t *testing.T) {
	sorted := msSamples(1, 2, 3, 4, 5)
	counts := make([]int, len(sorted))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		got := resampledPercentile(sorted, 0.5, rng, counts)
		if got < sorted[0] || got > sorted[len(sorted)-1] || got%time.Millisecond != 0 {
			t.Fatalf("resampledPercentile = %v; not a sample", got)
		}
	}
	if got := resampledPercentile(sorted[:1], 0.99, rng, counts); got != sorted[0] {
		t.Errorf("resampledPercentile of one = %v; want %v", got, sorted[0])
	}
}

// fakeBenchServer answers the API calls bench makes, instantly.
func fakeBenchServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	files := map[string][]byte{}
	var next atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "boxkite_execs_total 0") })
	mux.HandleFunc("POST /v1/sandboxes", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("sb%d", next.Add(1)), "status": "running"})
	})
	mux.HandleFunc("GET /v1/sandboxes", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "[]") })
	mux.HandleFunc("POST /v1/sandboxes/{id}/exec", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"exit_code":0}`) })
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("PUT /v1/sandboxes/{id}/files/raw", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		files[r.PathValue("id")+r.URL.Query().Get("path")] = body
		mu.Unlock()
		fmt.Fprintf(w, `{"size":%d}`, len(body))
	})
	mux.HandleFunc("GET /v1/sandboxes/{id}/files/raw", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		body := files[r.PathValue("id")+r.URL.Query().Get("path")]
		mu.Unlock()
		_, _ = w.Write(body)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBenchFloorsInEveryPhase: every measured phase takes its own floor
// samples (one spawn after each operation of a serial phase, a round on
// each side of a concurrent one), every measure is divided by its phase's
// floors, and the old ratios keep dividing by the pooled start and end
// rounds.
func TestBenchFloorsInEveryPhase(t *testing.T) {
	srv := fakeBenchServer(t)
	var spawns, bwraps atomic.Int64
	opts := benchOptions{sandboxes: 3, execs: 4, concurrency: 2, snapshots: 0}
	b := &bench{
		c: &client.Client{BaseURL: srv.URL}, opts: opts, label: "t", prog: &benchProgress{},
		floor: &floorSampler{
			spawn: func(context.Context) (time.Duration, error) { spawns.Add(1); return 2 * time.Millisecond, nil },
			bwrap: func(context.Context) (time.Duration, error) { bwraps.Add(1); return 10 * time.Millisecond, nil },
		},
	}
	rep := &benchReport{}
	if err := b.run(context.Background(), rep); err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(b.failures) > 0 {
		t.Fatalf("failures: %v", b.failures)
	}
	type phaseCount struct {
		Phase, How string
		Spawns     int
	}
	var got []phaseCount
	for _, p := range rep.Floors.Phases {
		n := 0
		if p.Spawn != nil {
			n = p.Spawn.N
			// A phase's F against the pooled F shows the drift.
			if want := round3(p.Spawn.P50MS / rep.Floors.Spawn.P50MS); p.Spawn.P50VsSpawn != want {
				t.Errorf("phase %s: F is %v x the pooled F, want %v", p.Phase, p.Spawn.P50VsSpawn, want)
			}
		}
		got = append(got, phaseCount{p.Phase, p.How, n})
	}
	ids := opts.sandboxes + opts.concurrency
	want := []phaseCount{
		{"start", floorsRound, 25},
		{"create", floorsBracketed, 2 * bracketSpawns},
		{"burst_create", floorsBracketed, 2 * bracketSpawns},
		{"exec", floorsInterleaved, ids * opts.execs},
		{"files", floorsInterleaved, ids * (1 + opts.execs)},
		{"delete", floorsBracketed, 2 * bracketSpawns},
		{"end", floorsRound, 25},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("floor samples by phase (-want +got):\n%s", diff)
	}
	// The start and end rounds go through the sampler too: they ran the
	// host's bwrap, which fails while another process's mounts come and go.
	if n := int(spawns.Load()); n != 2*25+ids*opts.execs+ids*(1+opts.execs)+6*bracketSpawns {
		t.Errorf("%d spawns through the sampler; want the start and end rounds, one per serial operation and the brackets", n)
	}
	if n := bwraps.Load(); n < 2*10 {
		t.Errorf("%d bwraps through the sampler; want at least the start and end rounds' 20", n)
	}
	measures := map[string]*latency{
		"create": rep.Create, "create_to_first_exec": rep.CreateToFirstExec,
		"burst_create": rep.BurstCreate, "burst_create_to_first_exec": rep.BurstCreateToFirstExec,
		"exec": rep.Exec, "file_write_1mib": rep.FileWrite, "file_read_1mib": rep.FileRead,
		"file_write_read_4kib": rep.FileWriteRead4KiB, "delete": rep.Delete,
	}
	for name, l := range measures {
		if l == nil || l.VsPhase == nil {
			t.Errorf("%s: no ratios to its phase's floors", name)
			continue
		}
		if l.VsPhase.SpawnP50MS != 2 || l.VsPhase.P50VsSpawn != round3(l.P50MS/2) {
			t.Errorf("%s: vs phase %+v; want its p50 %v over the sampler's F of 2 ms", name, l.VsPhase, l.P50MS)
		}
		if f := rep.Floors.Spawn.P50MS; l.P50VsSpawn != round3(l.P50MS/f) || l.P50VsSpawnCI == nil {
			t.Errorf("%s: p50_vs_spawn %v (ci %v); want %v over the pooled F %v, with an interval", name, l.P50VsSpawn, l.P50VsSpawnCI, l.P50MS, f)
		}
	}
	if !strings.Contains(rep.Floors.Ratios, "vs_phase_floors") {
		t.Errorf("floors.ratios does not say how the ratios were formed: %q", rep.Floors.Ratios)
	}
}

// TestPrintBenchPhaseRatios: the human output shows each measure's ratio to
// its phase's floors with the interval, and the floors of every phase.
func TestPrintBenchPhaseRatios(t *testing.T) {
	r := &benchReport{Sandboxes: 1, Execs: 1, Concurrency: 1}
	r.Exec = &latency{N: 3, P50MS: 5, VsPhase: &phaseRatios{
		Phase: "exec", SpawnP50MS: 2, P50VsSpawn: 2.5, P50SpawnCI: &[2]float64{2.04, 2.96},
		BwrapP50MS: ptr(10.0), P50VsBwrap: ptr(0.5), P50BwrapCI: &[2]float64{0.41, 0.62},
	}}
	r.Floors.Phases = []phaseFloors{{Phase: "exec", How: floorsInterleaved, BwrapEvery: 10, Spawn: &latency{N: 3, P50MS: 2}, Bwrap: &latency{N: 1, P50MS: 10}}}
	var out strings.Builder
	if err := printBench(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"P50/F IN PHASE [95%]", "2.5× [2.0–3.0]", "0.5× [0.4–0.6]", "exec (interleaved): F 2.00ms (n 3), B 10.0ms (n 1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestBenchFloorRoundSurvivesBwrapFailures: a bwrap spawn that fails (a
// mount vanishing under its bind of the host's tree while other sandboxes
// come and go) is counted in the start and end rounds as in every phase,
// where one failure in each of three rounds of 10 failed the whole bench
// (bench.txtar failed so while another server churned sandboxes).
func TestBenchFloorRoundSurvivesBwrapFailures(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	b := &bench{floor: &floorSampler{
		spawn: func(context.Context) (time.Duration, error) { return 2 * time.Millisecond, nil },
		bwrap: func(context.Context) (time.Duration, error) {
			if calls.Add(1)%2 == 0 {
				return 0, errors.New("bwrap: Can't bind mount /oldroot/ on /newroot/: No such file or directory")
			}
			return 10 * time.Millisecond, nil
		},
	}}
	var fl floors
	p := b.phase("start", floorsRound, 0)
	if err := b.measureFloors(context.Background(), &fl, p); err != nil {
		t.Fatal(err)
	}
	if len(b.failures) > 0 || fl.noBwrap || len(fl.bwrap) != 10 || p.bwrapErrors != 9 {
		t.Errorf("failures %q, no bwrap %v, %d bwrap samples, %d errors; want none, false, 10 and 9 counted",
			b.failures, fl.noBwrap, len(fl.bwrap), p.bwrapErrors)
	}
	// A bwrap that never works is a failure, once.
	b.floor.bwrap = func(context.Context) (time.Duration, error) { return 0, errors.New("no namespaces") }
	fl = floors{}
	if err := b.measureFloors(context.Background(), &fl, b.phase("end", floorsRound, 0)); err != nil || len(b.failures) != 1 || !fl.noBwrap {
		t.Errorf("err %v, failures %q, no bwrap %v; want one failure and no bwrap", err, b.failures, fl.noBwrap)
	}
}

// TestBenchRefusedKeyFailsFirst: a key the server refuses fails the run
// with the server's error and exit code before anything is measured or
// created (bench used to measure its floors first, then fail every create).
func TestBenchRefusedKeyFailsFirst(t *testing.T) {
	var creates atomic.Int64
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"code": "invalid_api_key", "message": "invalid API key", "hint": "check the key",
		}}),
		"POST /v1/sandboxes": func(w http.ResponseWriter, _ *http.Request) {
			creates.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
		},
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	r := runCLI(t, "", "bench", "--sandboxes", "1", "--execs", "1", "--concurrency", "1")
	if r.code != 4 || !strings.Contains(r.stderr, "invalid API key") || !strings.Contains(r.stderr, "\nhint: ") {
		t.Errorf("exit %d, stderr %q; want exit 4 naming the refused key, with a hint", r.code, r.stderr)
	}
	if n := creates.Load(); n != 0 {
		t.Errorf("bench tried %d creates with a refused key", n)
	}
}

// TestBenchInterrupted: Ctrl-C during a run exits 130 saying it was
// interrupted and that the sandboxes it made were removed, not silently
// (bench printed nothing at all).
func TestBenchInterrupted(t *testing.T) {
	// Without this binary as the CLI to time (its start is measured
	// before the creates), the run reaches the creates at once.
	args0 := os.Args[0]
	os.Args[0] = filepath.Join(t.TempDir(), "no-such-boxkite")
	t.Cleanup(func() { os.Args[0] = args0 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu      sync.Mutex
		live    []api.Sandbox
		deleted atomic.Int64
	)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			json.NewEncoder(w).Encode(append([]api.Sandbox{}, live...))
		},
		"GET /metrics": func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "boxkite_execs_total 0") },
		"POST /v1/sandboxes": func(w http.ResponseWriter, r *http.Request) {
			var req api.CreateSandboxRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			sb := api.Sandbox{ID: "sb1", Label: req.Label, Status: api.StatusActive}
			mu.Lock()
			live = append(live, sb)
			mu.Unlock()
			cancel() // the user's Ctrl-C, once a sandbox is made (its answer may be cut off)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(sb)
		},
		"DELETE /v1/sandboxes/sb1": func(w http.ResponseWriter, _ *http.Request) {
			deleted.Add(1)
			mu.Lock()
			live = nil
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		},
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	var out, errOut strings.Builder
	code := Execute(ctx, NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test")),
		[]string{"bench", "--sandboxes", "1", "--execs", "1", "--concurrency", "1"})
	want := "error: bench interrupted: nothing reported; removed the 1 sandbox it had made\n"
	if code != exitInterrupted || errOut.String() != want || out.String() != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 130 and stderr %q", code, out.String(), errOut.String(), want)
	}
	if n := deleted.Load(); n != 1 {
		t.Errorf("sandbox deleted %d times, want once", n)
	}
}
