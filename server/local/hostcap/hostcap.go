//go:build linux

// Package hostcap is the local driver's account of the host's own limits
// (issue 19): free disk on the state directory's filesystem and on the
// clone pool, tasks, loop devices and memory, read from /proc, /sys and
// statfs and cached between creates (a reading serves for a while, kept
// fresh in the background after a create), with the admission of creates
// and uploads against them and the report of GET /v1/host. Sandbox disks
// are sparse images and limits are per sandbox, so they overcommit the
// host on purpose: thousands of idle sandboxes fit. What must not happen
// is the host itself running out, of disk (acknowledged writes lost) or
// of tasks (nothing can fork, running sandboxes included). So the driver
// refuses creates (and, for the disk, uploads) before then.
//
// It knows nothing of sandboxes but what its Source tells it: whether
// they take loop devices, the clone pool, and the tasks in their cgroups
// (summed with Pids, the cache of their pids.current files).
package hostcap

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// Defaults of Limits.
const (
	DefaultMinFreeDisk   = 1 << 30   // watermark of the state directory's filesystem
	DefaultMinFreeMemory = 256 << 20 // memory creates leave available, at least
	// sandboxTasks is the tasks a new sandbox is assumed to take before
	// any runs: its jail's sidecar (one Go process) and a little room.
	sandboxTasks = 32
	// sandboxMemory is the host memory a new idle sandbox is assumed to take.
	sandboxMemory = 16 << 20
	// loopReserve is loop devices left for everything else on the host.
	loopReserve = 16
	// TTL is how long one reading of the host serves admissions before it
	// is taken again, in the background (Read).
	TTL = 250 * time.Millisecond
	// MaxAge is how old a reading may be and still serve while a new one
	// is taken; an older one is taken again while the caller waits.
	MaxAge = 5 * time.Second
	// KeepFor is how long after a create's admission the reading is kept
	// fresh in the background (keepFresh), so that the creates of a
	// session with pauses between them find one to serve instead of
	// taking it on their path; a host without creates for that long reads
	// nothing.
	KeepFor = time.Minute
	// KeepEvery is how often a kept reading is taken again: well within
	// MaxAge, so that it still serves when a reading takes a second or two
	// on a loaded host.
	KeepEvery = 2 * time.Second
)

// Limits bound what the driver's sandboxes may take of the host.
// Zero fields take the defaults described.
type Limits struct {
	// MinFreeDisk is the free-space watermark, in bytes, of the
	// filesystem of the state directory (sandbox disks and volumes):
	// below it creates and uploads are refused with 507, and below half
	// of it running sandboxes are frozen until space is freed. 0 means
	// DefaultMinFreeDisk, or a tenth of a smaller filesystem; negative,
	// no watermark.
	MinFreeDisk int64
	// MaxThreads caps the host's tasks (threads included) that creates
	// may approach, a tenth kept in reserve for the sandboxes already
	// running; 0 means the kernel's limit, the smaller of
	// kernel.pid_max and kernel.threads-max.
	MaxThreads int64
	// MaxSandboxThreads caps the tasks of this driver's sandboxes
	// together (from their cgroups); 0 means no cap of its own.
	MaxSandboxThreads int64
	// MinFreeMemory is the memory (MemAvailable) creates leave free, in
	// bytes; 0 means the larger of DefaultMinFreeMemory and a twentieth
	// of MemTotal.
	MinFreeMemory int64
	// ProcRoot is where /proc and /sys are read from; "" means "/".
	// Tests point it at a fake host.
	ProcRoot string
}

// Source is what a Host reads of the driver, asked at each reading (the
// driver settles its storage, cgroups and clone pool after it made the
// Host).
type Source interface {
	// Loop reports whether sandboxes take loop devices (their disks).
	Loop() bool
	// ClonePool returns the driver's clone pool, nil without one.
	ClonePool() ClonePool
	// SandboxTasks returns the tasks in the sandboxes' cgroups and how
	// many sandboxes that counts; ok is false without cgroups.
	SandboxTasks(ctx context.Context) (tasks, sandboxes int64, ok bool)
}

// ClonePool is the loop-mounted filesystem sandbox disks live in, which
// grows with the host's.
type ClonePool interface {
	// Mount is where it is mounted.
	Mount() string
	// Grows counts its grows so far: a reading of it before one is stale.
	Grows() int64
	// Growable reports whether it should grow for a host filesystem of
	// hostTotal bytes.
	Growable(hostTotal int64) bool
	// MaybeGrow grows it in the background when it is growable.
	MaybeGrow(hostTotal int64)
	// Grow grows it now (or waits for the grow under way).
	Grow()
}

// Reading is one reading of the host's use of its limits.
type Reading struct {
	At time.Time

	DiskTotal, DiskFree int64
	PoolTotal, PoolFree int64 // the clone pool's filesystem; 0 without it
	PoolGrows           int64 // the pool's grows when it was read (ClonePool.Grows)
	Threads, MaxThreads int64
	SandboxThreads      int64 // tasks of the driver's sandboxes; -1 without cgroups
	Sandboxes           int64 // how many sandboxes that counts
	Loops, MaxLoops     int64
	MemTotal, MemAvail  int64
}

// Host caches the latest reading and counts creates since.
type Host struct {
	stateDir string
	limits   Limits
	src      Source

	mu         sync.Mutex
	reading    *Reading
	created    int64 // sandboxes created since the reading
	refreshing bool  // a reading is being taken in the background

	// keepFor and keepEvery are KeepFor and KeepEvery (tests shorten
	// them; keepFor 0 keeps nothing).
	keepFor, keepEvery time.Duration
	keepUntil          time.Time     // the kept reading is kept until then
	keeping            bool          // keepFresh runs
	stop               chan struct{} // closed by Stop: keepFresh ends
	stopOnce           sync.Once
}

// New returns the account of the host whose state directory is stateDir
// (sandbox disks and volumes), under limits, for the driver src.
func New(stateDir string, limits Limits, src Source) *Host {
	return &Host{
		stateDir: stateDir, limits: limits, src: src,
		keepFor: KeepFor, keepEvery: KeepEvery, stop: make(chan struct{}),
	}
}

// procRoot is where host files are read from.
func (h *Host) procRoot() string { return cmpOr(h.limits.ProcRoot, "/") }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Read returns the latest reading and how many sandboxes were
// created since it was taken. A reading older than TTL is taken
// again in the background while it still serves, up to MaxAge,
// with its cheap parts (free disk, host tasks, memory: a statfs and two
// small /proc files) read afresh for the caller; an older one, or none,
// is taken while the caller waits. The rest (the loop devices, and every
// sandbox's and warm member's state file and cgroup files: a few file
// operations each, milliseconds with a warm pool of 40 on a loaded host,
// more with thousands of sandboxes) is what a create should not wait
// for; in between, the creates counted since stand in for what they
// took. For KeepFor after a create's admission, keepFresh takes
// it every KeepEvery instead, so a create in that time neither
// waits for it nor starts one beside itself and its first exec.
func (h *Host) Read(ctx context.Context) (*Reading, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reading != nil {
		switch age := time.Since(h.reading.At); {
		case age < TTL:
			return h.reading, h.created, nil
		case age < MaxAge:
			r := *h.reading
			if err := h.readCheap(&r); err != nil {
				return nil, 0, err
			}
			if !h.refreshing && !h.keeping {
				h.refreshing = true
				go h.refreshReading(h.created)
			}
			return &r, h.created, nil
		}
	}
	r, err := h.takeReading(ctx)
	if err != nil {
		return nil, 0, err
	}
	h.reading, h.created = r, 0
	return r, 0, nil
}

// refreshReading takes a reading in the background; created is the
// count of creates when it started. Those counted since may be in the
// new reading or not, so they stay counted: too many, never too few.
func (h *Host) refreshReading(created int64) {
	r, err := h.takeReading(context.Background())
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refreshing = false
	if err != nil {
		return // the next caller that waits for a reading reports it
	}
	if h.reading != nil && !r.At.After(h.reading.At) {
		return // one taken while the caller waited is newer
	}
	h.reading, h.created = r, h.created-created
}

// Keep keeps the reading fresh for a while (KeepFor) from now, starting
// keepFresh unless it runs: a create was admitted, and more are likely to
// follow.
func (h *Host) Keep() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.keepFor <= 0 {
		return
	}
	h.keepUntil = time.Now().Add(h.keepFor)
	if !h.keeping {
		h.keeping = true
		go h.keepFresh(h.keepEvery)
	}
}

// keepFresh takes the reading every keepEvery (in the background, as
// refreshReading does: the creates counted since it started stay
// counted) until keepUntil has passed or the driver shuts down. What
// admits stays as it was: the costly parts of a reading serve up to
// MaxAge old, with the creates since counted against them, and
// the cheap parts are read afresh past TTL; if a reading here
// fails or lags, the next create past MaxAge takes one itself.
func (h *Host) keepFresh(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			h.mu.Lock()
			h.keeping = false
			h.mu.Unlock()
			return
		case <-t.C:
		}
		h.mu.Lock()
		if time.Now().After(h.keepUntil) {
			h.keeping = false
			h.mu.Unlock()
			return
		}
		if h.refreshing {
			h.mu.Unlock()
			continue
		}
		h.refreshing = true
		created := h.created
		h.mu.Unlock()
		h.refreshReading(created)
	}
}

// Stop ends keepFresh (the driver's Shutdown). Stopping again is a
// no-op.
func (h *Host) Stop() {
	h.stopOnce.Do(func() { close(h.stop) })
}

// Forget drops the latest reading, so that the next admission takes a new
// one (tests that changed the host under it).
func (h *Host) Forget() {
	h.mu.Lock()
	h.reading = nil
	h.mu.Unlock()
}

// NoteCreated counts a sandbox created since the reading.
func (h *Host) NoteCreated() {
	h.mu.Lock()
	h.created++
	h.mu.Unlock()
}

// readDisk returns a reading of the state directory's filesystem alone:
// the host reading's when that is no older than TTL, else a
// statfs of its own (the rest of the host reading, which walks every
// sandbox's cgroups and the loop devices, is not taken for it).
func (h *Host) readDisk() (*Reading, error) {
	h.mu.Lock()
	if r := h.reading; r != nil && time.Since(r.At) < TTL {
		h.mu.Unlock()
		return r, nil
	}
	h.mu.Unlock()
	r := &Reading{At: time.Now(), SandboxThreads: -1}
	if err := h.statDisk(r); err != nil {
		return nil, err
	}
	return r, nil
}

// statDisk fills r's disk figures from a statfs of the state directory
// and, with the clone pool, of the pool, which it grows in the background
// when the host has grown past it.
func (h *Host) statDisk(r *Reading) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(h.stateDir, &fs); err != nil {
		return fmt.Errorf("read free disk space: %w", err)
	}
	r.DiskTotal, r.DiskFree = int64(fs.Blocks)*fs.Bsize, int64(fs.Bavail)*fs.Bsize
	pool := h.src.ClonePool()
	if pool == nil {
		return nil
	}
	if err := statPool(pool, r); err != nil {
		return err
	}
	pool.MaybeGrow(r.DiskTotal)
	return nil
}

// statPool fills r's pool figures from a statfs of the clone pool.
func statPool(pool ClonePool, r *Reading) error {
	grows := pool.Grows() // before the statfs: a grow after it is seen as one
	var fs unix.Statfs_t
	if err := unix.Statfs(pool.Mount(), &fs); err != nil {
		return fmt.Errorf("read the clone pool's free space: %w", err)
	}
	r.PoolTotal, r.PoolFree = int64(fs.Blocks)*fs.Bsize, int64(fs.Bavail)*fs.Bsize
	r.PoolGrows = grows
	return nil
}

// Take takes a whole reading now, neither cached nor counted
// (benchmarks).
func (h *Host) Take(ctx context.Context) (*Reading, error) { return h.takeReading(ctx) }

func (h *Host) takeReading(ctx context.Context) (*Reading, error) {
	r := &Reading{At: time.Now(), SandboxThreads: -1}
	if err := h.readCheap(r); err != nil {
		return nil, err
	}
	var err error
	if r.MaxThreads, err = readTaskLimit(h.procRoot()); err != nil {
		return nil, err
	}
	if h.limits.MaxThreads > 0 {
		r.MaxThreads = min(r.MaxThreads, h.limits.MaxThreads)
	}
	r.Loops, r.MaxLoops = readLoops(h.procRoot())
	if tasks, n, ok := h.src.SandboxTasks(ctx); ok {
		r.SandboxThreads, r.Sandboxes = tasks, n
	}
	return r, nil
}

// readCheap fills in the uses of the host that change from one create
// to the next and cost a few system calls: free disk (a statfs), host
// tasks and memory (two small /proc files). The task limit (two sysctl
// files, which an administrator changes, not a create) is read with the
// rest of the reading.
func (h *Host) readCheap(r *Reading) error {
	if err := h.statDisk(r); err != nil {
		return err
	}
	root := h.procRoot()
	var err error
	if r.Threads, err = readTasks(root); err != nil {
		return err
	}
	if r.MemTotal, r.MemAvail, err = readMemory(root); err != nil {
		return err
	}
	return nil
}

// Watermark is the free-space watermark for a filesystem of total bytes.
func (l Limits) Watermark(total int64) int64 {
	switch w := l.MinFreeDisk; {
	case w < 0:
		return 0
	case w > 0:
		return w
	}
	return min(int64(DefaultMinFreeDisk), total/10)
}

// minFreeMemory is the memory creates leave available.
func (l Limits) minFreeMemory(total int64) int64 {
	if m := l.MinFreeMemory; m > 0 {
		return m
	}
	return max(int64(DefaultMinFreeMemory), total/20)
}

// threadReserve is the tasks kept for the sandboxes already running.
func threadReserve(limit int64) int64 { return max(64, limit/10) }

// tasksPerSandbox is what a new sandbox is assumed to take: the mean of
// those running when known, else sandboxTasks.
func (r *Reading) tasksPerSandbox() int64 {
	if r.Sandboxes > 0 && r.SandboxThreads > 0 {
		return max(sandboxTasks/2, (r.SandboxThreads+r.Sandboxes-1)/r.Sandboxes)
	}
	return sandboxTasks
}

// AdmitCreate admits n creates (model.CapacityDriver), or refuses them
// with a *model.HostLimitError for the resource that is short.
func (h *Host) AdmitCreate(ctx context.Context, n int) error {
	r, since, err := h.Read(ctx)
	h.Keep() // refused or not: more creates are likely to follow
	if err != nil {
		return err
	}
	if err := h.checkDisk(r); err != nil {
		return err
	}
	k := since + int64(n)
	per := r.tasksPerSandbox()
	if refuse := r.MaxThreads - threadReserve(r.MaxThreads); r.Threads+k*per > refuse {
		return &model.HostLimitError{Resource: api.HostThreads, Used: r.Threads, Limit: r.MaxThreads, Hint: threadsHint}
	}
	if c := h.limits.MaxSandboxThreads; c > 0 && r.SandboxThreads >= 0 && r.SandboxThreads+k*per > c {
		return &model.HostLimitError{
			Resource: api.SandboxThreads, Used: r.SandboxThreads, Limit: c,
			Hint: "remove sandboxes you no longer need, or raise the server's sandbox task cap",
		}
	}
	if h.src.Loop() && r.MaxLoops > 0 && r.Loops+k > r.MaxLoops-loopReserve {
		return &model.HostLimitError{Resource: api.HostLoopDevices, Used: r.Loops, Limit: r.MaxLoops, Hint: loopsHint}
	}
	if floor := h.limits.minFreeMemory(r.MemTotal); r.MemAvail-k*sandboxMemory < floor {
		return &model.HostLimitError{
			Resource: api.HostMemory, Used: r.MemTotal - r.MemAvail, Limit: r.MemTotal - floor,
			Hint: "remove sandboxes you no longer need, or free memory on the host",
		}
	}
	return nil
}

// Hints of host limit refusals.
const (
	threadsHint = "remove sandboxes you no longer need, or raise the host's limits: sysctl -w kernel.pid_max=4194304 kernel.threads-max=4194304"
	loopsHint   = "remove sandboxes and volumes you no longer need; loop devices are made on demand up to the kernel's limit (the loop module's max_part lowers it)"
)

// AdmitWrite admits a write to the disks (model.CapacityDriver). A
// write's admission needs the disk's free space only: it reads that alone
// (readDisk), so an upload never waits for the whole host reading (issue
// 27: with a few thousand loop devices or sandboxes on the host, that
// reading took milliseconds every TTL, on the path of whichever upload
// came then).
func (h *Host) AdmitWrite() error {
	r, err := h.readDisk()
	if err != nil {
		return err
	}
	return h.checkDisk(r)
}

func (h *Host) checkDisk(r *Reading) error {
	if w := h.limits.Watermark(r.DiskTotal); w > 0 && r.DiskFree < w {
		return &model.HostLimitError{
			Resource: api.HostDiskResource, Used: r.DiskTotal - r.DiskFree, Limit: w, Free: r.DiskFree,
			Hint: fmt.Sprintf("free space on %s (remove sandboxes and volumes you no longer need), then retry", h.stateDir),
		}
	}
	return h.checkPool(r)
}

// checkPool refuses what the clone pool has no room for, though the host
// has (a pool the host outgrew and that could not grow, or one whose
// free space XFS's reserves took): a sandbox's disk lives in the pool,
// and admitted there every write of it would fail. The pool's watermark
// is the host's rule for a filesystem of its size. A pool below it while
// the host has grown past it is grown first, and read again.
func (h *Host) checkPool(r *Reading) error {
	w := h.limits.Watermark(r.PoolTotal)
	pool := h.src.ClonePool()
	if r.PoolTotal == 0 || w <= 0 || r.PoolFree >= w || pool == nil {
		return nil
	}
	if pool.Growable(r.DiskTotal) {
		pool.Grow() // or wait for the one under way
	}
	if pool.Grows() != r.PoolGrows { // grown since r was read
		grown := *r
		if err := statPool(pool, &grown); err != nil {
			return err
		}
		if w = h.limits.Watermark(grown.PoolTotal); grown.PoolFree >= w {
			return nil
		}
		r = &grown
	}
	return &model.HostLimitError{
		Resource: api.HostDiskResource, Disk: "the clone pool", Used: r.PoolTotal - r.PoolFree, Limit: w, Free: r.PoolFree,
		Hint: fmt.Sprintf("free space in the clone pool %s (remove sandboxes and snapshots you no longer need), or grow the host's filesystem: the pool grows with it; then retry", pool.Mount()),
	}
}

// Status is the host's use of its limits (model.CapacityDriver's
// Capacity, without the sandboxes' own disks).
func (h *Host) Status(ctx context.Context) (api.HostStatus, error) {
	r, since, err := h.Read(ctx)
	if err != nil {
		return api.HostStatus{}, err
	}
	w := h.limits.Watermark(r.DiskTotal)
	out := api.HostStatus{
		Driver: "local",
		Disk: &api.HostDisk{
			Path: h.stateDir, TotalBytes: r.DiskTotal, FreeBytes: r.DiskFree,
			WatermarkBytes: w, FreezeBelowBytes: w / 2, Refusing: w > 0 && r.DiskFree < w,
		},
	}
	if pw := h.limits.Watermark(r.PoolTotal); r.PoolTotal > 0 && !out.Disk.Refusing && r.PoolFree-pw < r.DiskFree-w {
		// The pool has less room above its watermark than the host: it
		// binds creates (checkPool) and the sandboxes' uploads, whose
		// disks it holds, and freezes sandboxes below half its
		// watermark as the host does (diskRoom).
		out.Disk = &api.HostDisk{
			Path: h.src.ClonePool().Mount(), TotalBytes: r.PoolTotal, FreeBytes: r.PoolFree,
			WatermarkBytes: pw, FreezeBelowBytes: pw / 2, Refusing: pw > 0 && r.PoolFree < pw,
		}
	}
	refuse := r.MaxThreads - threadReserve(r.MaxThreads)
	out.Limits = append(out.Limits, api.HostLimit{
		Resource: api.HostThreads, Unit: "count", Used: r.Threads, Limit: r.MaxThreads, RefuseAt: refuse,
		Refusing: r.Threads+(since+1)*r.tasksPerSandbox() > refuse, Hint: threadsHint,
	})
	if c := h.limits.MaxSandboxThreads; c > 0 && r.SandboxThreads >= 0 {
		out.Limits = append(out.Limits, api.HostLimit{
			Resource: api.SandboxThreads, Unit: "count", Used: r.SandboxThreads, Limit: c, RefuseAt: c,
			Refusing: r.SandboxThreads+(since+1)*r.tasksPerSandbox() > c,
		})
	}
	if h.src.Loop() && r.MaxLoops > 0 {
		out.Limits = append(out.Limits, api.HostLimit{
			Resource: api.HostLoopDevices, Unit: "count", Used: r.Loops, Limit: r.MaxLoops, RefuseAt: r.MaxLoops - loopReserve,
			Refusing: r.Loops+since+1 > r.MaxLoops-loopReserve, Hint: loopsHint,
		})
	}
	floor := h.limits.minFreeMemory(r.MemTotal)
	out.Limits = append(out.Limits, api.HostLimit{
		Resource: api.HostMemory, Unit: "bytes", Used: r.MemTotal - r.MemAvail, Limit: r.MemTotal, RefuseAt: r.MemTotal - floor,
		Refusing: r.MemAvail-(since+1)*sandboxMemory < floor,
	})
	return out, nil
}

// DiskRoom reads the host's and the clone pool's free space: low when
// either is below half its watermark, where the driver's storage watch
// freezes its sandboxes, room when both are at or above it, where it
// thaws them; pool says the clone pool is the low one. A pool short of
// space while the host has grown past it is grown first (the pool cannot
// be grown by freeing, so a frozen sandbox would wait for nothing).
func (h *Host) DiskRoom() (low, pool, room bool, err error) {
	r := &Reading{}
	if err := h.statDisk(r); err != nil {
		return false, false, false, err
	}
	if cp := h.src.ClonePool(); cp != nil {
		if pw := h.limits.Watermark(r.PoolTotal); r.PoolTotal > 0 && r.PoolFree < pw && cp.Growable(r.DiskTotal) {
			cp.Grow()
			if err := statPool(cp, r); err != nil {
				return false, false, false, err
			}
		}
	}
	w, pw := h.limits.Watermark(r.DiskTotal), h.limits.Watermark(r.PoolTotal)
	hostLow := w > 0 && r.DiskFree < w/2
	pool = !hostLow && r.PoolTotal > 0 && pw > 0 && r.PoolFree < pw/2
	room = r.DiskFree >= w && (r.PoolTotal == 0 || r.PoolFree >= pw)
	return hostLow || pool, pool, room, nil
}

// readTasks reads the host's tasks: the total of /proc/loadavg's fourth
// field.
func readTasks(root string) (int64, error) {
	b, err := jail.ReadSmallFile(filepath.Join(root, "proc/loadavg"))
	if err != nil {
		return 0, fmt.Errorf("read host tasks: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, fmt.Errorf("read host tasks: /proc/loadavg is %q", b)
	}
	_, total, ok := strings.Cut(f[3], "/")
	used, err := strconv.ParseInt(total, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("read host tasks: /proc/loadavg is %q", b)
	}
	return used, nil
}

// readTaskLimit reads the host's task limit, the smaller of pid_max and
// threads-max.
func readTaskLimit(root string) (int64, error) {
	pidMax, err1 := readInt(root, "proc/sys/kernel/pid_max")
	threadsMax, err2 := readInt(root, "proc/sys/kernel/threads-max")
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("read host task limits: %w", err)
	}
	return min(pidMax, threadsMax), nil
}

// readMemory reads MemTotal and MemAvailable, in bytes.
func readMemory(root string) (total, avail int64, err error) {
	b, err := jail.ReadSmallFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return 0, 0, fmt.Errorf("read host memory: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "MemTotal" && name != "MemAvailable") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		kib, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if name == "MemTotal" {
			total = kib << 10
		} else {
			avail = kib << 10
		}
	}
	if total == 0 {
		return 0, 0, errors.New("read host memory: no MemTotal in /proc/meminfo")
	}
	return total, avail, nil
}

// readLoops counts the loop devices with a backing file and how many the
// kernel can make: minor numbers (20 bits) shifted by the partitions each
// device may have (the loop module's max_part). 0, 0 without loop devices.
//
// The devices in use are read from /proc/partitions, one read, which lists
// a block device only while it has a size: a loop device from when it is
// bound to a (non-empty) file until it is detached. Unbound devices stay in
// /sys/block once made, and a host that ran a few thousand sandboxes keeps
// a few thousand of them: a stat of each one's loop/backing_file per
// reading was most of the server's CPU in a stream of uploads (issue 27),
// since every upload's admission may take the reading.
func readLoops(root string) (used, limit int64) {
	used = countLoops(root)
	if used == 0 && !exists(filepath.Join(root, "dev/loop-control")) && !exists(filepath.Join(root, "sys/module/loop")) {
		return 0, 0
	}
	shift := 0
	if maxPart, err := readInt(root, "sys/module/loop/parameters/max_part"); err == nil && maxPart > 0 {
		shift = bits.Len64(uint64(maxPart))
	}
	return used, int64(1<<20) >> shift
}

// countLoops counts the whole loop devices (loopN, not their partitions
// loopNpM) in /proc/partitions.
func countLoops(root string) int64 {
	b, err := jail.ReadSmallFile(filepath.Join(root, "proc/partitions"))
	if err != nil {
		return 0
	}
	var n int64
	for line := range strings.Lines(string(b)) {
		fields := strings.Fields(line) // major minor #blocks name
		if len(fields) != 4 {
			continue
		}
		if num, ok := strings.CutPrefix(fields[3], "loop"); ok && num != "" && strings.Trim(num, "0123456789") == "" {
			n++
		}
	}
	return n
}

func readInt(root, p string) (int64, error) {
	b, err := jail.ReadSmallFile(filepath.Join(root, p))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
