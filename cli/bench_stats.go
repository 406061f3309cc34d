package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// latency summarises one measure of `boxkite bench`: its distribution in
// milliseconds and each percentile as a multiple of the floors measured in
// the same run (PERFORMANCE.md), so numbers from different machines compare.
type latency struct {
	N      int     `json:"n"`
	MinMS  float64 `json:"min_ms"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
	MeanMS float64 `json:"mean_ms"`
	// Ratios to F, the p50 of a bare spawn of /bin/true from this process.
	P50VsSpawn float64 `json:"p50_vs_spawn"`
	P95VsSpawn float64 `json:"p95_vs_spawn"`
	P99VsSpawn float64 `json:"p99_vs_spawn"`
	// Ratios to B, the p50 of one bubblewrap spawn; null without bwrap.
	P50VsBwrap *float64 `json:"p50_vs_bwrap"`
	P95VsBwrap *float64 `json:"p95_vs_bwrap"`
	P99VsBwrap *float64 `json:"p99_vs_bwrap"`
	// 95% bootstrap intervals of P50VsSpawn and P50VsBwrap: how sure
	// this run is of them (ratioCI).
	P50VsSpawnCI *[2]float64 `json:"p50_vs_spawn_ci95,omitempty"`
	P50VsBwrapCI *[2]float64 `json:"p50_vs_bwrap_ci95,omitempty"`
	// VsPhase is the same ratios to the floors taken in this measure's
	// own phase (floors.phases), under the load its operations met.
	VsPhase *phaseRatios `json:"vs_phase_floors,omitempty"`

	samples []time.Duration // sorted; for the intervals
	phase   *phaseFloor     // the phase whose floors VsPhase divides by
}

// in ties l to the floors of the phase it was measured in; nil-safe.
func (l *latency) in(p *phaseFloor) *latency {
	if l != nil {
		l.phase = p
	}
	return l
}

// summarize computes a latency from samples (nil when there are none);
// spawn and bwrap are the floors' p50s in ms (bwrap 0 when absent).
func summarize(samples []time.Duration, spawn, bwrap float64) *latency {
	if len(samples) == 0 {
		return nil
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	l := &latency{
		N: len(s), MinMS: ms(s[0]), MaxMS: ms(s[len(s)-1]), MeanMS: round3(ms(sum) / float64(len(s))),
		P50MS: ms(percentile(s, 0.50)), P95MS: ms(percentile(s, 0.95)), P99MS: ms(percentile(s, 0.99)),
		samples: s,
	}
	l.setRatios(spawn, bwrap)
	return l
}

// setRatios sets the percentiles' multiples of the floors' p50s (ms; 0
// when unknown).
func (l *latency) setRatios(spawn, bwrap float64) {
	if l == nil {
		return
	}
	l.P50VsSpawn, l.P95VsSpawn, l.P99VsSpawn = 0, 0, 0
	l.P50VsBwrap, l.P95VsBwrap, l.P99VsBwrap = nil, nil, nil
	if spawn > 0 {
		l.P50VsSpawn, l.P95VsSpawn, l.P99VsSpawn = round3(l.P50MS/spawn), round3(l.P95MS/spawn), round3(l.P99MS/spawn)
	}
	if bwrap > 0 {
		ratio := func(v float64) *float64 { r := round3(v / bwrap); return &r }
		l.P50VsBwrap, l.P95VsBwrap, l.P99VsBwrap = ratio(l.P50MS), ratio(l.P95MS), ratio(l.P99MS)
	}
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// samples collects durations from concurrent workers.
type samples struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

func (s *samples) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.d)
}

// bwrapArgs is floor B: the obvious do-it-yourself sandbox (PERFORMANCE.md).
var bwrapArgs = []string{"--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"}

// spawnFloor runs path args n times, one after another, and returns each
// wall time: os/exec, no namespaces unless the command makes them.
func spawnFloor(ctx context.Context, n int, path string, args ...string) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, path, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return out, fmt.Errorf("run %s: %w: %s", path, err, strings.TrimSpace(stderr.String()))
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// spawnRate is the host's fork+exec throughput: workers goroutines
// spawning /bin/true until total spawns are done, in spawns per second.
func spawnRate(ctx context.Context, workers, total int) (float64, error) {
	start := time.Now()
	err := parallel(ctx, workers, total, func(ctx context.Context, _ int) error {
		return exec.CommandContext(ctx, "/bin/true").Run()
	})
	if err != nil {
		return 0, err
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

// parallel calls fn(i) for i in [0,n) on at most workers goroutines and
// returns the errors joined. It stops handing out work once ctx is done.
func parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	work := make(chan int)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range work {
				errs[i] = fn(ctx, i)
			}
		})
	}
feed:
	for i := range n {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// memory summarises the idle memory of sandboxes, from their cgroups.
type memory struct {
	Sandboxes     int   `json:"sandboxes"`
	MinBytes      int64 `json:"min_bytes"`
	P50Bytes      int64 `json:"p50_bytes"`
	MeanBytes     int64 `json:"mean_bytes"`
	MaxBytes      int64 `json:"max_bytes"`
	AnonP50Bytes  int64 `json:"anon_p50_bytes"`
	AnonMeanBytes int64 `json:"anon_mean_bytes"`
	// ThreadsP50 and ThreadsMax are the tasks in a sandbox's cgroup
	// (pids.current: its processes' threads, the sidecar's included); 0
	// when the server has no pids accounting.
	ThreadsP50 int64 `json:"threads_p50"`
	ThreadsMax int64 `json:"threads_max"`
}

func summarizeMemory(total, anon, pids []int64) *memory {
	if len(total) == 0 {
		return nil
	}
	t, a, p := slices.Clone(total), slices.Clone(anon), slices.Clone(pids)
	slices.Sort(t)
	slices.Sort(a)
	slices.Sort(p)
	mean := func(v []int64) int64 {
		var s int64
		for _, x := range v {
			s += x
		}
		return s / int64(len(v))
	}
	return &memory{
		Sandboxes: len(t), MinBytes: t[0], P50Bytes: t[(len(t)-1)/2], MeanBytes: mean(t), MaxBytes: t[len(t)-1],
		AnonP50Bytes: a[(len(a)-1)/2], AnonMeanBytes: mean(a),
		ThreadsP50: p[(len(p)-1)/2], ThreadsMax: p[len(p)-1],
	}
}

// memAvailable reads MemAvailable from /proc/meminfo in bytes (0 when it
// cannot: not Linux).
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			var kib int64
			if _, err := fmt.Sscan(rest, &kib); err == nil {
				return kib << 10
			}
		}
	}
	return 0
}

// kernelRelease is uname -r, or "" off Linux.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// benchProgress draws one self-overwriting status line on a terminal's stderr;
// elsewhere it is silent.
type benchProgress struct {
	w   io.Writer // nil: no terminal
	mu  sync.Mutex
	msg string
	n   int
	of  int
}

func (p *benchProgress) phase(msg string, of int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msg, p.n, p.of = msg, 0, of
	p.draw()
}

func (p *benchProgress) step() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.draw()
}

// set shows n of the phase's count done.
func (p *benchProgress) set(n int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n = n
	p.draw()
}

func (p *benchProgress) draw() {
	line := p.msg
	if p.of > 0 {
		line = fmt.Sprintf("%s %d/%d", p.msg, p.n, p.of)
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
}

func (p *benchProgress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\x1b[K")
}

// mib formats bytes in MiB with one decimal.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// cmpFailures orders failure messages for a stable report.
func cmpFailures(a, b string) int { return cmp.Compare(a, b) }
