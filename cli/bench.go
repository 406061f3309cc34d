package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

type benchOptions struct {
	sandboxes   int
	execs       int
	concurrency int
	idle        int
	snapshots   int
	out         outputFlags
}

// benchFileSize is the size of the file write and read measures.
const benchFileSize = 1 << 20

// benchSmallFileSize is the small file of the write+read round trip.
const benchSmallFileSize = 4 << 10

// benchLifetime bounds the life of bench sandboxes, so that even a bench
// killed with SIGKILL leaves nothing running for long.
const benchLifetime = 15

func newBenchCmd(app *App) *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:     "bench [--sandboxes N] [--execs N] [--concurrency C] [--json]",
		Short:   "Measure sandbox create, exec and file latencies against the server",
		GroupID: groupSettings,
		Long: `Measure the server the way a user meets it, with the API: create
--sandboxes sandboxes one after another (create, and create until a first
exec returns), then --concurrency at once; run --execs 'true' execs in each
(the exec round trip), then as many from --concurrency workers at once (the
throughput); write and read a 1 MiB file in each, and --execs times a
4 KiB one (write+read timed together); and, once they have sat idle for
3 s, read each sandbox's memory and threads from its cgroup.

Every latency is also shown as a multiple of two floors measured in the same
run on this machine, at its start and at its end: F, a bare spawn of
/bin/true from this process, and B, one bubblewrap sandbox (bwrap
--unshare-all ... true) when bwrap is installed. As the load of a shared
machine drifts within a run, floors are also taken inside every phase:
one spawn after each exec or file round trip and a bwrap after every
tenth, and a round just before and just after the creates, the burst and
the deletes (not during: a floor right after a create meets its tail,
one during a burst the burst); the IN PHASE
columns divide by those, each p50 ratio with its 95% bootstrap interval,
and --json lists the floors of every phase (floors.phases). The exec throughput is
compared with /bin/true spawned from as many workers. Run bench on the
server's host for the floors to mean anything. When the server reports a
warm pool in /metrics, bench waits (up to 3 minutes) for it to fill before
it measures the floors, at the start and at the end, so that sandboxes
starting into the pool load neither the floors nor the creates it serves.

The report names the machine: CPUs and model, memory, kernel, whether it
is virtualised, pid_max, and the load average at the start and the end (on a
shared machine compare ratios from one run, not times).

With --idle N it then creates N more sandboxes, --concurrency at a time,
so that N live at once, checks that every one answers an exec, lets them
sit idle for 3 s, and reports each one's memory and threads (tasks in its
cgroup) and, when the server runs on this host, the host memory and
threads each one added (in --json null, with host_memory_unmeasured saying
why, when other processes freed more memory than they took meanwhile).

With --snapshots N it then fills a sandbox's workspace with 100 MiB and runs
N rounds of: a freeze pause and its resume to the first exec, a snapshot, a
fork ×1 to the child's first exec, and a fork ×8 until all eight answered.

Every sandbox bench creates is deleted at the end, on Ctrl-C too: an
interrupted run reports nothing, says it was interrupted and how many
sandboxes it removed, and exits 130.`,
		Example: `  boxkite bench
  boxkite bench --sandboxes 20 --execs 50 --concurrency 10 --json
  boxkite bench --sandboxes 2 --execs 5 --concurrency 2 --idle 1000`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := opts.out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if err := opts.validate(cmd); err != nil {
				return err
			}
			return runBench(cmd.Context(), app, opts, asJSON)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.sandboxes, "sandboxes", 10, "sandboxes to create one after another")
	f.IntVar(&opts.execs, "execs", 20, "execs of true to run in each sandbox")
	f.IntVar(&opts.concurrency, "concurrency", 5, "sandboxes to create at once, and exec workers")
	f.IntVar(&opts.idle, "idle", 0, "then create this many idle sandboxes and check that all answer an exec")
	f.IntVar(&opts.snapshots, "snapshots", 0, "then this many rounds of pause and resume, a snapshot, fork ×1 and fork ×8 of a sandbox holding 100 MiB")
	opts.out.register(cmd, benchReport{})
	return cmd
}

func (o benchOptions) validate(cmd *cobra.Command) error {
	switch {
	case o.sandboxes < 1 || o.sandboxes > 1000:
		return usageErrorf(helpHint(cmd), "--sandboxes must be between 1 and 1000, got %d", o.sandboxes)
	case o.execs < 1 || o.execs > 200:
		// Each sandbox runs up to 2*execs+1 execs, within the sidecar's
		// default budget of 500 calls.
		return usageErrorf(helpHint(cmd), "--execs must be between 1 and 200, got %d", o.execs)
	case o.concurrency < 1 || o.concurrency > 100:
		return usageErrorf(helpHint(cmd), "--concurrency must be between 1 and 100, got %d", o.concurrency)
	case o.idle < 0 || o.idle > 10000:
		return usageErrorf(helpHint(cmd), "--idle must be between 0 and 10000, got %d", o.idle)
	case o.snapshots < 0 || o.snapshots > 100:
		return usageErrorf(helpHint(cmd), "--snapshots must be between 0 and 100, got %d", o.snapshots)
	}
	return nil
}

// benchReport is bench's result; its JSON field names are stable.
type benchReport struct {
	Server      string    `json:"server"`
	Date        time.Time `json:"date"`
	Sandboxes   int       `json:"sandboxes"`
	Execs       int       `json:"execs"`
	Concurrency int       `json:"concurrency"`
	Host        benchHost `json:"host"`
	Floors      struct {
		Spawn            *latency `json:"spawn"` // F
		Bwrap            *latency `json:"bwrap"` // B; null without bwrap
		HostSpawnsPerSec float64  `json:"host_spawns_per_sec"`
		// Phases are the floors taken inside each measured phase, which
		// a measure's vs_phase_floors divide by; Ratios says how each
		// ratio of the report was formed.
		Phases []phaseFloors `json:"phases"`
		Ratios string        `json:"ratios"`
	} `json:"floors"`
	WarmPool               *warmPool `json:"warm_pool"` // null when the server reports no warm pool
	CLIStart               *latency  `json:"cli_start"` // this binary's `version`
	Create                 *latency  `json:"create"`
	CreateToFirstExec      *latency  `json:"create_to_first_exec"`
	BurstCreate            *latency  `json:"burst_create"`
	BurstCreateToFirstExec *latency  `json:"burst_create_to_first_exec"`
	Exec                   *latency  `json:"exec"`
	FileWrite              *latency  `json:"file_write_1mib"`
	FileRead               *latency  `json:"file_read_1mib"`
	FileWriteRead4KiB      *latency  `json:"file_write_read_4kib"`
	Delete                 *latency  `json:"delete"`
	ExecThroughput         struct {
		Workers          int     `json:"workers"`
		Execs            int     `json:"execs"`
		PerSec           float64 `json:"per_sec"`
		HostSpawnsPerSec float64 `json:"host_spawns_per_sec"`
		VsHost           float64 `json:"vs_host"`
	} `json:"exec_throughput"`
	IdleMemory *memory        `json:"idle_memory"` // null when the server has no accounting
	Idle       *idleBench     `json:"idle"`        // --idle only
	Snapshots  *snapshotBench `json:"snapshots"`   // --snapshots only
	Failures   []string       `json:"failures"`
}

// idleBench is the result of --idle.
type idleBench struct {
	Requested int      `json:"requested"`
	Created   int      `json:"created"`
	Answered  int      `json:"answered"` // of those, how many answered an exec
	Create    *latency `json:"create"`
	Exec      *latency `json:"exec"`
	Memory    *memory  `json:"memory"`
	// HostMemoryPerSandboxBytes is the fall in the host's MemAvailable
	// while they ran, divided by their number; null when the server is
	// not on this host, or when MemAvailable rose (other processes freed
	// more than the sandboxes took: HostMemoryUnmeasured says so).
	HostMemoryPerSandboxBytes *int64 `json:"host_memory_per_sandbox_bytes"`
	HostMemoryUnmeasured      string `json:"host_memory_unmeasured,omitempty"` // why it is null on this host
	// HostThreadsPerSandbox is the rise in the host's tasks (threads, the
	// fourth field of /proc/loadavg) while they ran, divided by their
	// number; 0 when the server is not on this host.
	HostThreadsPerSandbox float64 `json:"host_threads_per_sandbox"`
}

// bench is one run: the client, what it created, and what failed.
type bench struct {
	c     *client.Client
	opts  benchOptions
	label string // the run's: each sandbox is labelled label-N (labels are unique)
	prog  *benchProgress
	seq   atomic.Int64  // the N of the next sandbox's label
	floor *floorSampler // takes the floor samples inside the phases
	self  string        // this binary, for the CLI start; "" skips it

	mu        sync.Mutex
	live      []string // sandboxes created and not yet deleted
	failures  []string
	createErr error         // the first create's error, for a run that made none
	phases    []*phaseFloor // in the order measured
}

func runBench(ctx context.Context, app *App, opts benchOptions, asJSON bool) error {
	base, err := app.Client()
	if err != nil {
		return err
	}
	// A transport that keeps a connection per worker: the default keeps
	// two or three and would measure connection set-up.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = opts.concurrency + 4
	b := &bench{
		c:     &client.Client{BaseURL: base.BaseURL, APIKey: base.APIKey, UserAgent: "boxkite-bench/" + app.Version, HTTPClient: &http.Client{Transport: tr}},
		opts:  opts,
		label: "boxkite-bench-" + randomHex(4),
		prog:  &benchProgress{},
		floor: newFloorSampler(),
	}
	// As invoked, not os.Executable: a multi-call binary (a test's) picks
	// its command by the name it was run as.
	if self, err := exec.LookPath(os.Args[0]); err == nil {
		b.self = self
	}
	if app.IO.ErrTTY {
		b.prog.w = app.IO.ErrOut
	}
	defer b.prog.done()
	// Whatever happens, and on Ctrl-C (ctx ends), delete what was made.
	defer func() { _, _ = b.cleanup(context.WithoutCancel(ctx)) }()

	rep := &benchReport{
		Server: base.BaseURL, Date: time.Now().UTC().Truncate(time.Second),
		Sandboxes: opts.sandboxes, Execs: opts.execs, Concurrency: opts.concurrency,
	}
	rep.Host.CPUs, rep.Host.OS, rep.Host.Arch, rep.Host.Kernel = runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, kernelRelease()
	rep.Host.readHost()
	rep.Host.LoadStart = loadNow()
	if err := b.run(ctx, rep); err != nil {
		if ctx.Err() != nil { // Ctrl-C: say so, and what became of the sandboxes
			return b.interrupted(ctx)
		}
		return err
	}
	rep.Host.LoadEnd = loadNow()
	b.prog.done()
	slices.SortFunc(b.failures, cmpFailures)
	rep.Failures = append([]string{}, b.failures...)
	if asJSON {
		if err := opts.out.write(app.IO, rep); err != nil {
			return err
		}
	} else if err := printBench(app.IO.Out, rep); err != nil {
		return err
	}
	if n := len(rep.Failures); n > 0 {
		return &hintError{err: fmt.Errorf("bench: %d operations failed", n), hint: "the report's failures list each one (with --json: .failures)"}
	}
	return nil
}

// run measures everything in order; rep fills up as it goes.
func (b *bench) run(ctx context.Context, rep *benchReport) error {
	o := b.opts
	// A server that is down or refuses the key fails the run at once,
	// before seconds of floors are measured for nothing.
	if _, _, err := b.c.ListSandboxesPage(ctx, true, 1, ""); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	// The floors are measured at the start and again at the end, so they
	// reflect the machine as the whole run found it; each time once the
	// server's warm pool is full, so that members starting beside them
	// inflate neither the floors nor the creates served from the pool.
	if ready, target, waited := b.waitWarmPool(ctx, warmPoolWait); target > 0 {
		rep.WarmPool = &warmPool{Target: target, Ready: ready, WaitedMS: waited.Milliseconds()}
	}
	b.prog.phase("floors", 0)
	var fl floors
	if err := b.measureFloors(ctx, &fl, b.phase("start", floorsRound, 0)); err != nil {
		return err
	}
	f, bw := fl.p50s()
	rate, err := spawnRate(ctx, o.concurrency, o.concurrency*o.execs)
	if err != nil {
		return fmt.Errorf("measure host spawns: %w", err)
	}
	rep.Floors.HostSpawnsPerSec = round3(rate)
	rep.CLIStart = b.measureCLIStart(ctx, f, bw)

	ids := b.measureCreates(ctx, rep, f, bw)
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ids) == 0 {
		// Its error says why, with the server's hint and exit code (a
		// server down, a key refused, a quota reached).
		b.mu.Lock()
		err := b.createErr
		b.mu.Unlock()
		if err == nil {
			err = errors.New("no answer")
		}
		return fmt.Errorf("bench: no sandbox could be created: %w", err)
	}

	b.measureExecs(ctx, rep, ids, f, bw)
	b.measureFiles(ctx, rep, ids, f, bw)
	b.settle(ctx)
	rep.IdleMemory = b.measureMemory(ctx, ids)
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.idle > 0 {
		rep.Idle = b.measureIdle(ctx, f, bw)
	}
	if o.snapshots > 0 {
		rep.Snapshots = b.measureSnapshots(ctx, o.snapshots, f, bw)
	}

	rep.Delete = b.measureDeletes(ctx, ids, f, bw)
	if err := ctx.Err(); err != nil {
		return err
	}
	if ready, target, waited := b.waitWarmPool(ctx, warmPoolWait); target > 0 && rep.WarmPool != nil {
		rep.WarmPool.ReadyEnd, rep.WarmPool.WaitedEndMS = ready, waited.Milliseconds()
	}
	b.prog.phase("floors", 0)
	if err := b.measureFloors(ctx, &fl, b.phase("end", floorsRound, 0)); err != nil {
		return err
	}
	rate2, err := spawnRate(ctx, o.concurrency, o.concurrency*o.execs)
	if err != nil {
		return fmt.Errorf("measure host spawns: %w", err)
	}
	rep.Floors.HostSpawnsPerSec = round3((rate + rate2) / 2)
	rep.Floors.Spawn, rep.Floors.Bwrap = fl.summaries()
	b.mu.Lock()
	for _, p := range b.phases {
		rep.Floors.Phases = append(rep.Floors.Phases, p.report(!fl.noBwrap))
	}
	b.mu.Unlock()
	rep.rescale(&fl)
	return nil
}

// createAndExec creates one sandbox and runs its first exec, timing both
// from the create's start. It returns the id of a created sandbox even if
// its exec failed.
func (b *bench) createAndExec(ctx context.Context, create, first *samples) (string, bool) {
	start := time.Now()
	sb, err := b.c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: b.nextLabel(), LifetimeMinutes: benchLifetime})
	if err != nil {
		b.fail("create: %v", err)
		b.mu.Lock()
		if b.createErr == nil {
			b.createErr = err
		}
		b.mu.Unlock()
		return "", false
	}
	create.add(time.Since(start))
	b.track(sb.ID)
	if err := b.exec(ctx, sb.ID); err != nil {
		b.fail("first exec in %s: %v", sb.ID, err)
		return sb.ID, true
	}
	first.add(time.Since(start))
	return sb.ID, true
}

func (b *bench) exec(ctx context.Context, id string) error {
	res, err := b.c.Exec(ctx, id, api.ExecRequest{Command: "true"})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
	}
	return nil
}

// serverIsLocal reports whether the server listens on loopback, so this
// host's memory is the server's.
func (b *bench) serverIsLocal() bool {
	u, err := url.Parse(b.c.BaseURL)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

func (b *bench) track(id string) {
	b.mu.Lock()
	b.live = append(b.live, id)
	b.mu.Unlock()
}

func (b *bench) delete(ctx context.Context, id string) error {
	if err := b.c.DeleteSandbox(ctx, id); err != nil {
		return err
	}
	b.mu.Lock()
	b.live = slices.DeleteFunc(b.live, func(s string) bool { return s == id })
	b.mu.Unlock()
	return nil
}

func (b *bench) fail(format string, args ...any) {
	b.mu.Lock()
	b.failures = append(b.failures, fmt.Sprintf(format, args...))
	b.mu.Unlock()
}

// nextLabel is a label of this run's, new each time: the server keeps
// labels unique among an account's active sandboxes.
func (b *bench) nextLabel() string {
	return fmt.Sprintf("%s-%d", b.label, b.seq.Add(1))
}

// interrupted is the error of a run Ctrl-C stopped (exit 130): it
// removes the sandboxes bench made and says so, as nothing was measured
// to the end.
func (b *bench) interrupted(ctx context.Context) error {
	b.prog.done()
	removed, left := b.cleanup(context.WithoutCancel(ctx))
	msg := fmt.Sprintf("bench interrupted: nothing reported; removed the %d %s it had made", removed, plural(removed, "sandbox"))
	if removed == 0 && left == 0 {
		msg = "bench interrupted: nothing reported; no sandbox of its was left"
	}
	if left > 0 {
		msg += fmt.Sprintf("; could not remove %d: 'boxkite session ls' lists them (labelled %s-N)", left, b.label)
	}
	return &exitStatus{code: exitInterrupted, msg: msg}
}

// cleanup deletes every sandbox bench made that is still there: those it
// knows, and any with its labels (a create whose answer a Ctrl-C cut off).
// It returns how many it removed, and how many it could not.
func (b *bench) cleanup(ctx context.Context) (removed, left int) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b.mu.Lock()
	ids := slices.Clone(b.live)
	b.mu.Unlock()
	if sbs, err := b.c.ListSandboxes(ctx, true); err == nil {
		for _, sb := range sbs {
			if strings.HasPrefix(sb.Label, b.label+"-") && !slices.Contains(ids, sb.ID) {
				ids = append(ids, sb.ID)
			}
		}
	}
	if len(ids) == 0 {
		return 0, 0
	}
	b.prog.phase("cleaning up", len(ids))
	var gone, failed atomic.Int64
	_ = parallel(ctx, b.opts.concurrency, len(ids), func(ctx context.Context, i int) error {
		err := b.c.DeleteSandbox(ctx, ids[i])
		if e, ok := errors.AsType[*api.Error](err); err == nil || ok && e.Code == api.CodeNotFound { // gone already is fine too
			gone.Add(1)
		} else {
			failed.Add(1)
		}
		b.prog.step()
		return nil
	})
	b.prog.done()
	b.mu.Lock()
	b.live = nil
	b.mu.Unlock()
	return int(gone.Load()), int(failed.Load())
}

func randomHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}
