package cli

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// On a shared machine the floors drift within a run as much as a step of
// engineering moves a ratio (session 12: F 1.96–2.77 ms across three runs),
// so besides the floors at the start and the end (pooled, what the old
// ratios divide by) bench takes floor samples inside every measured phase:
// between the operations of a serial phase, and just before and just after
// a phase whose operations run at once (floors taken during a burst would
// be inflated by the burst itself). Each measure is then also divided by
// the floors of its own phase, and every p50 ratio carries a bootstrap
// interval, so a reader sees how sure one run is.

// Floor sampling per phase: a bare spawn after every operation of a serial
// phase, a bwrap (~5× dearer) after every bwrapEvery-th; bracketSpawns and
// bracketBwraps on each side of a concurrent phase.
const (
	bracketSpawns = 10
	bracketBwraps = 4
)

// How a phase's floors were taken.
const (
	floorsInterleaved = "interleaved" // one spawn after each operation, a bwrap after every Nth
	floorsBracketed   = "bracketed"   // a round just before and just after the phase
	floorsRound       = "round"       // the start and end rounds, pooled (the old floors)
)

// phaseFloor collects the floor samples taken in one measured phase; safe
// for concurrent use.
type phaseFloor struct {
	name       string
	how        string
	bwrapEvery int

	mu          sync.Mutex
	ops         int
	spawn       []time.Duration
	bwrap       []time.Duration
	bwrapErrors int
}

// phaseFloors is a phase's floors as reported in --json.
type phaseFloors struct {
	Phase string `json:"phase"`
	// How is "interleaved" (one spawn of /bin/true after each operation,
	// one bwrap after every BwrapEvery-th), "bracketed" (a round of 10
	// spawns and 4 bwraps just before and just after the phase, whose
	// operations run at once) or "round" (the pooled start and end rounds).
	How         string   `json:"how"`
	BwrapEvery  int      `json:"bwrap_every,omitempty"`
	Spawn       *latency `json:"spawn"`
	Bwrap       *latency `json:"bwrap"` // null without bwrap
	BwrapErrors int      `json:"bwrap_errors,omitempty"`
}

// floorSampler takes single floor samples; its spawners are fields so a
// test can count them without running processes.
type floorSampler struct {
	spawn func(ctx context.Context) (time.Duration, error)
	bwrap func(ctx context.Context) (time.Duration, error) // nil without bwrap
}

// newFloorSampler spawns /bin/true and, when installed, bwrap.
func newFloorSampler() *floorSampler {
	s := &floorSampler{spawn: func(ctx context.Context) (time.Duration, error) {
		return spawnOnce(ctx, "/bin/true")
	}}
	if path, err := exec.LookPath("bwrap"); err == nil {
		s.bwrap = func(ctx context.Context) (time.Duration, error) { return spawnOnce(ctx, path, bwrapArgs...) }
	}
	return s
}

// bwrapRound takes n bwrap samples, trying at most 3n times: the samples,
// how many spawns failed and the last failure.
func (b *bench) bwrapRound(ctx context.Context, n int) ([]time.Duration, int, error) {
	var (
		out     []time.Duration
		errs    int
		lastErr error
	)
	for range 3 * n {
		if len(out) == n || ctx.Err() != nil {
			break
		}
		d, err := b.floor.bwrap(ctx)
		if err != nil {
			errs++
			lastErr = err
			continue
		}
		out = append(out, d)
	}
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	return out, errs, lastErr
}

// sampleFloor takes n samples with sample.
func sampleFloor(ctx context.Context, n int, sample func(context.Context) (time.Duration, error)) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		d, err := sample(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

func spawnOnce(ctx context.Context, path string, args ...string) (time.Duration, error) {
	d, err := spawnFloor(ctx, 1, path, args...)
	if err != nil {
		return 0, err
	}
	return d[0], nil
}

// phase starts the floors of a measured phase.
func (b *bench) phase(name, how string, bwrapEvery int) *phaseFloor {
	p := &phaseFloor{name: name, how: how, bwrapEvery: max(bwrapEvery, 1)}
	b.mu.Lock()
	b.phases = append(b.phases, p)
	b.mu.Unlock()
	return p
}

// after takes the floor samples that follow one operation of an
// interleaved phase: a spawn, and every bwrapEvery-th time a bwrap.
func (b *bench) after(ctx context.Context, p *phaseFloor) {
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	p.ops++
	bwraps := 0
	if (p.ops-1)%p.bwrapEvery == 0 {
		bwraps = 1
	}
	p.mu.Unlock()
	b.sampleFloors(ctx, p, 1, bwraps)
}

// bracket takes a round of floor samples for a concurrent phase; call it
// just before and just after the phase.
func (b *bench) bracket(ctx context.Context, p *phaseFloor) {
	b.sampleFloors(ctx, p, bracketSpawns, bracketBwraps)
}

func (b *bench) sampleFloors(ctx context.Context, p *phaseFloor, spawns, bwraps int) {
	for range spawns {
		d, err := b.floor.spawn(ctx)
		if err != nil {
			if ctx.Err() == nil {
				b.fail("%s: spawn floor: %v", p.name, err)
			}
			return
		}
		p.mu.Lock()
		p.spawn = append(p.spawn, d)
		p.mu.Unlock()
	}
	if b.floor.bwrap == nil {
		return
	}
	for range bwraps {
		// A mount vanishing while bwrap copies the host's tree (a pool
		// member's disk) fails one spawn; it is counted, not a failure.
		d, err := b.floor.bwrap(ctx)
		p.mu.Lock()
		if err != nil {
			p.bwrapErrors++
		} else {
			p.bwrap = append(p.bwrap, d)
		}
		p.mu.Unlock()
	}
}

// report is the phase's floors for --json.
func (p *phaseFloor) report(haveBwrap bool) phaseFloors {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := phaseFloors{Phase: p.name, How: p.how, Spawn: summarize(p.spawn, 0, 0), BwrapErrors: p.bwrapErrors}
	if p.how == floorsInterleaved {
		r.BwrapEvery = p.bwrapEvery
	}
	if haveBwrap {
		r.Bwrap = summarize(p.bwrap, 0, 0)
	}
	return r
}

func (p *phaseFloor) samples() (spawn, bwrap []time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.spawn), slices.Clone(p.bwrap)
}

// phaseRatios is a measure's percentiles as multiples of the floors of its
// own phase (floors.phases names it), with 95% bootstrap intervals of the
// p50 ratios.
type phaseRatios struct {
	Phase      string      `json:"phase"`
	SpawnP50MS float64     `json:"spawn_p50_ms"`
	P50VsSpawn float64     `json:"p50_vs_spawn"`
	P50SpawnCI *[2]float64 `json:"p50_vs_spawn_ci95"`
	P95VsSpawn float64     `json:"p95_vs_spawn"`
	P99VsSpawn float64     `json:"p99_vs_spawn"`
	BwrapP50MS *float64    `json:"bwrap_p50_ms"`
	P50VsBwrap *float64    `json:"p50_vs_bwrap"`
	P50BwrapCI *[2]float64 `json:"p50_vs_bwrap_ci95"`
	P95VsBwrap *float64    `json:"p95_vs_bwrap"`
	P99VsBwrap *float64    `json:"p99_vs_bwrap"`
}

// newPhaseRatios divides a measure's samples by its phase's floors; nil
// when the phase has no spawn floor.
func newPhaseRatios(phase string, op, spawn, bwrap []time.Duration) *phaseRatios {
	if len(op) == 0 || len(spawn) == 0 {
		return nil
	}
	l := summarize(op, 0, 0)
	f := summarize(spawn, 0, 0).P50MS
	bw := 0.0
	if len(bwrap) > 0 {
		bw = summarize(bwrap, 0, 0).P50MS
	}
	l.setRatios(f, bw)
	r := &phaseRatios{
		Phase: phase, SpawnP50MS: f,
		P50VsSpawn: l.P50VsSpawn, P95VsSpawn: l.P95VsSpawn, P99VsSpawn: l.P99VsSpawn,
		P50SpawnCI: ratioCI(op, spawn),
	}
	if bw > 0 {
		r.BwrapP50MS = &bw
		r.P50VsBwrap, r.P95VsBwrap, r.P99VsBwrap = l.P50VsBwrap, l.P95VsBwrap, l.P99VsBwrap
		r.P50BwrapCI = ratioCI(op, bwrap)
	}
	return r
}

// bootstrapRounds is how many resamples an interval takes; ~1 ms each for
// a phase of 1000 samples.
const bootstrapRounds = 1000

// ratioCI is the 95% bootstrap interval of p50(op)/p50(floor): both sample
// sets resampled with replacement, independently, bootstrapRounds times.
// The generator's seed is fixed, so the same samples give the same interval
// (a report can be recomputed). Nil when either set is empty.
func ratioCI(op, floor []time.Duration) *[2]float64 {
	if len(op) == 0 || len(floor) == 0 {
		return nil
	}
	o, f := slices.Clone(op), slices.Clone(floor)
	slices.Sort(o)
	slices.Sort(f)
	rng := rand.New(rand.NewPCG(27, 13))
	counts := make([]int, max(len(o), len(f)))
	ratios := make([]float64, bootstrapRounds)
	for i := range ratios {
		fm := resampledPercentile(f, 0.5, rng, counts)
		ratios[i] = float64(resampledPercentile(o, 0.5, rng, counts)) / float64(max(fm, 1))
	}
	slices.Sort(ratios)
	return &[2]float64{round3(ratios[int(0.025*bootstrapRounds)]), round3(ratios[int(0.975*bootstrapRounds)-1])}
}

// resampledPercentile draws len(sorted) samples with replacement and
// returns their nearest-rank q percentile without sorting them: it counts
// how often each rank was drawn and walks the counts to the rank sought.
func resampledPercentile(sorted []time.Duration, q float64, rng *rand.Rand, counts []int) time.Duration {
	n := len(sorted)
	counts = counts[:n]
	clear(counts)
	for range n {
		counts[rng.IntN(n)]++
	}
	want := min(max(int(math.Ceil(q*float64(n))), 1), n) // nearest rank, as percentile
	seen := 0
	for i, c := range counts {
		seen += c
		if seen >= want {
			return sorted[i]
		}
	}
	return sorted[n-1]
}

// floors holds the spawn and bwrap samples of a run.
type floors struct {
	spawn, bwrap []time.Duration
	noBwrap      bool
}

// measureFloors adds a round of floor samples to fl and to the phase p:
// 25 spawns of /bin/true and 10 of bwrap, when installed, through the
// sampler (so a test's fake stands in for them too).
func (b *bench) measureFloors(ctx context.Context, fl *floors, p *phaseFloor) error {
	d, err := sampleFloor(ctx, 25, b.floor.spawn)
	if err != nil {
		return fmt.Errorf("measure the spawn floor: %w", err)
	}
	fl.spawn = append(fl.spawn, d...)
	p.mu.Lock()
	p.spawn = append(p.spawn, d...)
	p.mu.Unlock()
	if b.floor.bwrap == nil || fl.noBwrap {
		fl.noBwrap = true
		return nil
	}
	// bwrap binds the host's whole mount tree; a mount that disappears while
	// it copies the tree (a warm pool member's disk being unmounted, another
	// server's sandbox going) fails that one spawn. As in every phase it is
	// counted, not a failure; the round fails only when none of three
	// rounds' worth of spawns succeeds.
	d, errs, err := b.bwrapRound(ctx, 10)
	p.mu.Lock()
	p.bwrapErrors += errs
	p.mu.Unlock()
	if len(d) == 0 {
		b.fail("bwrap floor: %v", err)
		fl.noBwrap = true
		return nil
	}
	fl.bwrap = append(fl.bwrap, d...)
	p.mu.Lock()
	p.bwrap = append(p.bwrap, d...)
	p.mu.Unlock()
	return nil
}

func (fl *floors) summaries() (spawn, bwrap *latency) {
	spawn = summarize(fl.spawn, 0, 0)
	if !fl.noBwrap {
		bwrap = summarize(fl.bwrap, 0, 0)
	}
	return spawn, bwrap
}

// p50s are F and B in ms (B 0 without bwrap).
func (fl *floors) p50s() (f, bw float64) {
	spawn, bwrap := fl.summaries()
	if bwrap != nil {
		bw = bwrap.P50MS
	}
	return spawn.P50MS, bw
}

// ratiosMethod is floors.ratios in --json.
const ratiosMethod = "p50_vs_spawn, p95_vs_spawn, p99_vs_spawn (and _vs_bwrap) divide a measure's percentile " +
	"by the p50 of the floor samples of the start and end rounds pooled (floors.spawn, floors.bwrap), as before; " +
	"vs_phase_floors divides the same percentiles by the p50 of the floors taken in the measure's own phase " +
	"(floors.phases: interleaved between its operations, or bracketing a phase whose operations run at once); " +
	"every *_ci95 is the 95% bootstrap interval of its p50 ratio (1000 resamples of the measure and of the floor, " +
	"independently, with replacement; fixed seed)"

// rescale recomputes every ratio from the floors as finally measured:
// those of the pooled start and end rounds (fl), and each measure's
// phase's.
func (r *benchReport) rescale(fl *floors) {
	f, bw := r.Floors.Spawn.P50MS, 0.0
	if r.Floors.Bwrap != nil {
		bw = r.Floors.Bwrap.P50MS
	}
	ls := []*latency{
		r.Floors.Spawn, r.Floors.Bwrap, r.CLIStart, r.Create, r.CreateToFirstExec, r.BurstCreate,
		r.BurstCreateToFirstExec, r.Exec, r.FileWrite, r.FileRead, r.FileWriteRead4KiB, r.Delete,
	}
	if r.Idle != nil {
		ls = append(ls, r.Idle.Create, r.Idle.Exec)
	}
	if sn := r.Snapshots; sn != nil {
		ls = append(ls, sn.Resume, sn.Snapshot, sn.Fork1, sn.Fork8)
	}
	for _, l := range ls {
		l.setRatios(f, bw)
		if l == nil || l == r.Floors.Spawn || l == r.Floors.Bwrap {
			continue
		}
		l.P50VsSpawnCI, l.P50VsBwrapCI = ratioCI(l.samples, fl.spawn), nil
		if bw > 0 {
			l.P50VsBwrapCI = ratioCI(l.samples, fl.bwrap)
		}
		if l.phase != nil {
			spawn, bwrap := l.phase.samples()
			l.VsPhase = newPhaseRatios(l.phase.name, l.samples, spawn, bwrap)
		}
	}
	// Each phase's floors against the pooled ones: how far the host's
	// load drifted from phase to phase.
	for _, p := range r.Floors.Phases {
		p.Spawn.setRatios(f, bw)
		p.Bwrap.setRatios(f, bw)
	}
	r.Floors.Ratios = ratiosMethod
	t := &r.ExecThroughput
	t.HostSpawnsPerSec = r.Floors.HostSpawnsPerSec
	if t.HostSpawnsPerSec > 0 {
		t.VsHost = round3(t.PerSec / t.HostSpawnsPerSec)
	}
	r.Floors.Bwrap.setRatios(f, 0) // B's own row: only its multiple of F
}
