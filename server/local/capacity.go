//go:build linux

package local

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
	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// Host capacity (issue 19). Sandbox disks are sparse images and limits
// are per sandbox, so they overcommit the host on purpose: thousands of
// idle sandboxes fit. What must not happen is the host itself running
// out, of disk (acknowledged writes lost) or of tasks (nothing can fork,
// running sandboxes included). So the driver accounts for the host's own
// limits and refuses creates (and, for the disk, uploads) before then.

var (
	_ model.CapacityDriver = (*Driver)(nil)
	_ model.DiskSyncer     = (*Driver)(nil)
)

// Defaults of HostLimits.
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
	// capacityTTL is how long one reading of the host serves admissions
	// before it is taken again, in the background (readHost).
	capacityTTL = 250 * time.Millisecond
	// capacityMaxAge is how old a reading may be and still serve while a
	// new one is taken; an older one is taken again while the caller
	// waits.
	capacityMaxAge = 5 * time.Second
	// capacityKeepFor is how long after a create's admission the reading
	// is kept fresh in the background (keepFresh), so that the creates of
	// a session with pauses between them find one to serve instead of
	// taking it on their path; a host without creates for that long reads
	// nothing.
	capacityKeepFor = time.Minute
	// capacityKeepEvery is how often a kept reading is taken again: well
	// within capacityMaxAge, so that it still serves when a reading takes
	// a second or two on a loaded host.
	capacityKeepEvery = 2 * time.Second
)

// HostLimits bound what this driver's sandboxes may take of the host.
// Zero fields take the defaults described.
type HostLimits struct {
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

// hostReading is one reading of the host's use of its limits.
type hostReading struct {
	at time.Time

	diskTotal, diskFree int64
	poolTotal, poolFree int64 // the clone pool's filesystem; 0 without it
	poolGrows           int64 // the pool's grows when it was read (poolGrowth.grows)
	threads, maxThreads int64
	sandboxThreads      int64 // tasks of our sandboxes; -1 without cgroups
	sandboxes           int64 // how many sandboxes that counts
	loops, maxLoops     int64
	memTotal, memAvail  int64
}

// capacity caches the latest reading and counts creates since.
type capacity struct {
	mu         sync.Mutex
	reading    *hostReading
	created    int64 // sandboxes created since the reading
	refreshing bool  // a reading is being taken in the background

	// keepFor and keepEvery are capacityKeepFor and capacityKeepEvery
	// (tests shorten them; keepFor 0 keeps nothing). Set before the
	// driver's first admission.
	keepFor, keepEvery time.Duration
	keepUntil          time.Time     // the kept reading is kept until then
	keeping            bool          // keepFresh runs
	stop               chan struct{} // closed by Shutdown: keepFresh ends
	stopOnce           sync.Once

	pids pidsFiles // sandboxTasks' cache of the sandboxes' pids.current
}

// procRoot is where host files are read from.
func (d *Driver) procRoot() string { return cmpOr(d.cfg.Host.ProcRoot, "/") }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readHost returns the latest reading and how many sandboxes were
// created since it was taken. A reading older than capacityTTL is taken
// again in the background while it still serves, up to capacityMaxAge,
// with its cheap parts (free disk, host tasks, memory: a statfs and two
// small /proc files) read afresh for the caller; an older one, or none,
// is taken while the caller waits. The rest (the loop devices, and every
// sandbox's and warm member's state file and cgroup files: a few file
// operations each, milliseconds with a warm pool of 40 on a loaded host,
// more with thousands of sandboxes) is what a create should not wait
// for; in between, the creates counted since stand in for what they
// took. For capacityKeepFor after a create's admission, keepFresh takes
// it every capacityKeepEvery instead, so a create in that time neither
// waits for it nor starts one beside itself and its first exec.
func (d *Driver) readHost(ctx context.Context) (*hostReading, int64, error) {
	c := &d.capacity
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reading != nil {
		switch age := time.Since(c.reading.at); {
		case age < capacityTTL:
			return c.reading, c.created, nil
		case age < capacityMaxAge:
			r := *c.reading
			if err := d.readCheap(&r); err != nil {
				return nil, 0, err
			}
			if !c.refreshing && !c.keeping {
				c.refreshing = true
				go d.refreshReading(c.created)
			}
			return &r, c.created, nil
		}
	}
	r, err := d.takeReading(ctx)
	if err != nil {
		return nil, 0, err
	}
	c.reading, c.created = r, 0
	return r, 0, nil
}

// refreshReading takes a reading in the background; created is the
// count of creates when it started. Those counted since may be in the
// new reading or not, so they stay counted: too many, never too few.
func (d *Driver) refreshReading(created int64) {
	r, err := d.takeReading(context.Background())
	c := &d.capacity
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	if err != nil {
		return // the next caller that waits for a reading reports it
	}
	if c.reading != nil && !r.at.After(c.reading.at) {
		return // one taken while the caller waited is newer
	}
	c.reading, c.created = r, c.created-created
}

// keepReading keeps the reading fresh for c.keepFor from now, starting
// keepFresh unless it runs.
func (d *Driver) keepReading() {
	c := &d.capacity
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keepFor <= 0 {
		return
	}
	c.keepUntil = time.Now().Add(c.keepFor)
	if !c.keeping {
		c.keeping = true
		go d.keepFresh(c.keepEvery)
	}
}

// keepFresh takes the reading every keepEvery (in the background, as
// refreshReading does: the creates counted since it started stay
// counted) until keepUntil has passed or the driver shuts down. What
// admits stays as it was: the costly parts of a reading serve up to
// capacityMaxAge old, with the creates since counted against them, and
// the cheap parts are read afresh past capacityTTL; if a reading here
// fails or lags, the next create past capacityMaxAge takes one itself.
func (d *Driver) keepFresh(every time.Duration) {
	c := &d.capacity
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			c.mu.Lock()
			c.keeping = false
			c.mu.Unlock()
			return
		case <-t.C:
		}
		c.mu.Lock()
		if time.Now().After(c.keepUntil) {
			c.keeping = false
			c.mu.Unlock()
			return
		}
		if c.refreshing {
			c.mu.Unlock()
			continue
		}
		c.refreshing = true
		created := c.created
		c.mu.Unlock()
		d.refreshReading(created)
	}
}

// stopKeeping ends keepFresh (Shutdown). A driver New did not make
// (cleanup's) has no stop channel and never keeps a reading.
func (d *Driver) stopKeeping() {
	if c := &d.capacity; c.stop != nil {
		c.stopOnce.Do(func() { close(c.stop) })
	}
}

// noteCreated counts a sandbox created since the reading.
func (d *Driver) noteCreated() {
	d.capacity.mu.Lock()
	d.capacity.created++
	d.capacity.mu.Unlock()
}

// readDisk returns a reading of the state directory's filesystem alone:
// the host reading's when that is no older than capacityTTL, else a
// statfs of its own (the rest of the host reading, which walks every
// sandbox's cgroups and the loop devices, is not taken for it).
func (d *Driver) readDisk() (*hostReading, error) {
	c := &d.capacity
	c.mu.Lock()
	if r := c.reading; r != nil && time.Since(r.at) < capacityTTL {
		c.mu.Unlock()
		return r, nil
	}
	c.mu.Unlock()
	r := &hostReading{at: time.Now(), sandboxThreads: -1}
	if err := d.statDisk(r); err != nil {
		return nil, err
	}
	return r, nil
}

// statDisk fills r's disk figures from a statfs of the state directory
// and, with the clone pool, of the pool, which it grows in the background
// when the host has grown past it.
func (d *Driver) statDisk(r *hostReading) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(d.cfg.StateDir, &fs); err != nil {
		return fmt.Errorf("read free disk space: %w", err)
	}
	r.diskTotal, r.diskFree = int64(fs.Blocks)*fs.Bsize, int64(fs.Bavail)*fs.Bsize
	if d.cow.img == "" {
		return nil
	}
	if err := d.statPool(r); err != nil {
		return err
	}
	d.maybeGrowClonePool(r.diskTotal)
	return nil
}

// statPool fills r's pool figures from a statfs of the clone pool.
func (d *Driver) statPool(r *hostReading) error {
	grows := d.cow.grows.Load() // before the statfs: a grow after it is seen as one
	var fs unix.Statfs_t
	if err := unix.Statfs(d.cow.mnt, &fs); err != nil {
		return fmt.Errorf("read the clone pool's free space: %w", err)
	}
	r.poolTotal, r.poolFree = int64(fs.Blocks)*fs.Bsize, int64(fs.Bavail)*fs.Bsize
	r.poolGrows = grows
	return nil
}

func (d *Driver) takeReading(ctx context.Context) (*hostReading, error) {
	r := &hostReading{at: time.Now(), sandboxThreads: -1}
	if err := d.readCheap(r); err != nil {
		return nil, err
	}
	var err error
	if r.maxThreads, err = readTaskLimit(d.procRoot()); err != nil {
		return nil, err
	}
	if d.cfg.Host.MaxThreads > 0 {
		r.maxThreads = min(r.maxThreads, d.cfg.Host.MaxThreads)
	}
	r.loops, r.maxLoops = readLoops(d.procRoot())
	if d.cgroups != nil {
		r.sandboxThreads, r.sandboxes = d.sandboxTasks(ctx)
	}
	return r, nil
}

// readCheap fills in the uses of the host that change from one create
// to the next and cost a few system calls: free disk (a statfs), host
// tasks and memory (two small /proc files). The task limit (two sysctl
// files, which an administrator changes, not a create) is read with the
// rest of the reading.
func (d *Driver) readCheap(r *hostReading) error {
	if err := d.statDisk(r); err != nil {
		return err
	}
	root := d.procRoot()
	var err error
	if r.threads, err = readTasks(root); err != nil {
		return err
	}
	if r.memTotal, r.memAvail, err = readMemory(root); err != nil {
		return err
	}
	return nil
}

// sandboxTasks sums the tasks in this driver's sandboxes' cgroups, warm
// pool members included: those whose state file names a cgroup with
// pids accounting. Each one's pids.current is found once, from its state
// file, and then read alone at every reading (pidsFiles): a reading
// during a burst of creates, or with thousands of idle sandboxes, is one
// small read per sandbox, not a state file's decode and a failed open of
// the memory hierarchy's pids.current besides (bench/issue27/
// session14-cap14.md). A cached file that can no longer be read (the
// cgroup was removed: the sandbox ended, was paused with filesystem, or
// is being restarted) sends the reading back to the state file.
func (d *Driver) sandboxTasks(ctx context.Context) (tasks, sandboxes int64) {
	p := &d.capacity.pids
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = map[pidsKey]pidsFile{}
	}
	p.gen++
	parents := []string{d.sandboxesDir(), d.poolDir()}
	if d.moved.root != "" {
		parents = append(parents, d.moved.root) // sandboxes an earlier start left there (cow.go)
	}
	for i, parent := range parents {
		var err error
		if p.names, p.buf, err = readDirNames(parent, p.names[:0], p.buf); err != nil {
			continue // no sandboxes (or pool) yet
		}
		for _, name := range p.names {
			if ctx.Err() != nil {
				return tasks, sandboxes // a partial reading keeps every cached file
			}
			if n, ok := p.read(pidsKey{pool: i == 1, name: name}, parent); ok {
				tasks += n
				sandboxes++
			}
		}
	}
	for k, f := range p.files {
		if f.seen != p.gen {
			delete(p.files, k) // its directory is gone: removed, or a claimed member renamed
		}
	}
	return tasks, sandboxes
}

// pidsFiles caches each sandbox's and pool member's pids.current for
// sandboxTasks, by its directory.
type pidsFiles struct {
	mu    sync.Mutex // held by one sandboxTasks at a time
	files map[pidsKey]pidsFile
	gen   uint64   // sandboxTasks' readings; an entry not seen in the latest is dropped
	names []string // readDirNames' result and buffer, reused
	buf   []byte
}

// pidsKey is a sandbox's directory: its name under the sandboxes or the
// pool directory.
type pidsKey struct {
	pool bool
	name string
}

type pidsFile struct {
	path string // the cgroup's pids.current
	seen uint64 // the reading that last read it
}

// read returns the tasks of the sandbox or pool member k (under parent)
// and whether it counts.
func (p *pidsFiles) read(k pidsKey, parent string) (int64, bool) {
	if f, ok := p.files[k]; ok {
		if n, err := jail.ReadPids(f.path); err == nil {
			f.seen = p.gen
			p.files[k] = f
			return n, true
		}
		delete(p.files, k)
	}
	st, err := readState(filepath.Join(parent, k.name))
	if err != nil || len(st.Cgroup.Dirs) == 0 {
		return 0, false // not started yet, paused with filesystem, or without cgroups
	}
	// PidsFile, not Usage: the tasks alone, one file, where Usage also
	// probes and reads every hierarchy's memory files.
	path, n, err := st.Cgroup.PidsFile()
	if err != nil {
		return 0, false
	}
	p.files[k] = pidsFile{path: path, seen: p.gen}
	return n, true
}

// readDirNames appends the names in dir to names with plain system calls
// (open, getdents until the end, close: no poller round and no sort, as
// os.ReadDir has), buf being getdents' buffer, both returned for reuse.
func readDirNames(dir string, names []string, buf []byte) ([]string, []byte, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return names, buf, fmt.Errorf("read directory: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(fd)
	if len(buf) == 0 {
		buf = make([]byte, 16<<10) // ~400 entries a call
	}
	for {
		n, err := unix.Getdents(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return names, buf, fmt.Errorf("read directory: %w", &os.PathError{Op: "getdents", Path: dir, Err: err})
		case n <= 0:
			return names, buf, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// watermark is the free-space watermark for a filesystem of total bytes.
func (d *Driver) watermark(total int64) int64 {
	switch w := d.cfg.Host.MinFreeDisk; {
	case w < 0:
		return 0
	case w > 0:
		return w
	}
	return min(int64(DefaultMinFreeDisk), total/10)
}

// minFreeMemory is the memory creates leave available.
func (d *Driver) minFreeMemory(total int64) int64 {
	if m := d.cfg.Host.MinFreeMemory; m > 0 {
		return m
	}
	return max(int64(DefaultMinFreeMemory), total/20)
}

// threadReserve is the tasks kept for the sandboxes already running.
func threadReserve(limit int64) int64 { return max(64, limit/10) }

// tasksPerSandbox is what a new sandbox is assumed to take: the mean of
// those running when known, else sandboxTasks.
func (r *hostReading) tasksPerSandbox() int64 {
	if r.sandboxes > 0 && r.sandboxThreads > 0 {
		return max(sandboxTasks/2, (r.sandboxThreads+r.sandboxes-1)/r.sandboxes)
	}
	return sandboxTasks
}

// AdmitCreate implements model.CapacityDriver.
func (d *Driver) AdmitCreate(ctx context.Context, n int) error {
	r, since, err := d.readHost(ctx)
	d.keepReading() // refused or not: more creates are likely to follow
	if err != nil {
		return err
	}
	if err := d.checkDisk(r); err != nil {
		return err
	}
	k := since + int64(n)
	per := r.tasksPerSandbox()
	if refuse := r.maxThreads - threadReserve(r.maxThreads); r.threads+k*per > refuse {
		return &model.HostLimitError{Resource: api.HostThreads, Used: r.threads, Limit: r.maxThreads, Hint: threadsHint}
	}
	if c := d.cfg.Host.MaxSandboxThreads; c > 0 && r.sandboxThreads >= 0 && r.sandboxThreads+k*per > c {
		return &model.HostLimitError{
			Resource: api.SandboxThreads, Used: r.sandboxThreads, Limit: c,
			Hint: "remove sandboxes you no longer need, or raise the server's sandbox task cap",
		}
	}
	if d.storage == StorageLoop && r.maxLoops > 0 && r.loops+k > r.maxLoops-loopReserve {
		return &model.HostLimitError{Resource: api.HostLoopDevices, Used: r.loops, Limit: r.maxLoops, Hint: loopsHint}
	}
	if floor := d.minFreeMemory(r.memTotal); r.memAvail-k*sandboxMemory < floor {
		return &model.HostLimitError{
			Resource: api.HostMemory, Used: r.memTotal - r.memAvail, Limit: r.memTotal - floor,
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

// AdmitWrite implements model.CapacityDriver. A write's admission needs
// the disk's free space only: it reads that alone (readDisk), so an upload
// never waits for the whole host reading (issue 27: with a few thousand
// loop devices or sandboxes on the host, that reading took milliseconds
// every capacityTTL, on the path of whichever upload came then).
func (d *Driver) AdmitWrite(_ context.Context, id string) error {
	if id != "" && d.disks.failed(id) {
		return fmt.Errorf("%w: sandbox %s's disk could not store an earlier write", model.ErrInsufficientStorage, id)
	}
	r, err := d.readDisk()
	if err != nil {
		return err
	}
	return d.checkDisk(r)
}

func (d *Driver) checkDisk(r *hostReading) error {
	if w := d.watermark(r.diskTotal); w > 0 && r.diskFree < w {
		return &model.HostLimitError{
			Resource: api.HostDiskResource, Used: r.diskTotal - r.diskFree, Limit: w, Free: r.diskFree,
			Hint: fmt.Sprintf("free space on %s (remove sandboxes and volumes you no longer need), then retry", d.cfg.StateDir),
		}
	}
	return d.checkPool(r)
}

// checkPool refuses what the clone pool has no room for, though the host
// has (a pool the host outgrew and that could not grow, or one whose
// free space XFS's reserves took): a sandbox's disk lives in the pool,
// and admitted there every write of it would fail. The pool's watermark
// is the host's rule for a filesystem of its size. A pool below it while
// the host has grown past it is grown first, and read again.
func (d *Driver) checkPool(r *hostReading) error {
	w := d.watermark(r.poolTotal)
	if r.poolTotal == 0 || w <= 0 || r.poolFree >= w {
		return nil
	}
	if d.cow.growable(r.diskTotal) {
		d.growClonePool() // or wait for the one under way
	}
	if d.cow.grows.Load() != r.poolGrows { // grown since r was read
		grown := *r
		if err := d.statPool(&grown); err != nil {
			return err
		}
		if w = d.watermark(grown.poolTotal); grown.poolFree >= w {
			return nil
		}
		r = &grown
	}
	return &model.HostLimitError{
		Resource: api.HostDiskResource, Disk: "the clone pool", Used: r.poolTotal - r.poolFree, Limit: w, Free: r.poolFree,
		Hint: fmt.Sprintf("free space in the clone pool %s (remove sandboxes and snapshots you no longer need), or grow the host's filesystem: the pool grows with it; then retry", d.cow.mnt),
	}
}

// Capacity implements model.CapacityDriver.
func (d *Driver) Capacity(ctx context.Context, ids []string) (api.HostStatus, error) {
	r, since, err := d.readHost(ctx)
	if err != nil {
		return api.HostStatus{}, err
	}
	w := d.watermark(r.diskTotal)
	out := api.HostStatus{
		Driver: "local",
		Disk: &api.HostDisk{
			Path: d.cfg.StateDir, TotalBytes: r.diskTotal, FreeBytes: r.diskFree,
			WatermarkBytes: w, FreezeBelowBytes: w / 2, Refusing: w > 0 && r.diskFree < w,
		},
	}
	if pw := d.watermark(r.poolTotal); r.poolTotal > 0 && !out.Disk.Refusing && r.poolFree-pw < r.diskFree-w {
		// The pool has less room above its watermark than the host: it
		// binds creates (checkPool) and the sandboxes' uploads, whose
		// disks it holds, and freezes sandboxes below half its
		// watermark as the host does (diskRoom).
		out.Disk = &api.HostDisk{
			Path: d.cow.mnt, TotalBytes: r.poolTotal, FreeBytes: r.poolFree,
			WatermarkBytes: pw, FreezeBelowBytes: pw / 2, Refusing: pw > 0 && r.poolFree < pw,
		}
	}
	refuse := r.maxThreads - threadReserve(r.maxThreads)
	out.Limits = append(out.Limits, api.HostLimit{
		Resource: api.HostThreads, Unit: "count", Used: r.threads, Limit: r.maxThreads, RefuseAt: refuse,
		Refusing: r.threads+(since+1)*r.tasksPerSandbox() > refuse, Hint: threadsHint,
	})
	if c := d.cfg.Host.MaxSandboxThreads; c > 0 && r.sandboxThreads >= 0 {
		out.Limits = append(out.Limits, api.HostLimit{
			Resource: api.SandboxThreads, Unit: "count", Used: r.sandboxThreads, Limit: c, RefuseAt: c,
			Refusing: r.sandboxThreads+(since+1)*r.tasksPerSandbox() > c,
		})
	}
	if d.storage == StorageLoop && r.maxLoops > 0 {
		out.Limits = append(out.Limits, api.HostLimit{
			Resource: api.HostLoopDevices, Unit: "count", Used: r.loops, Limit: r.maxLoops, RefuseAt: r.maxLoops - loopReserve,
			Refusing: r.loops+since+1 > r.maxLoops-loopReserve, Hint: loopsHint,
		})
	}
	floor := d.minFreeMemory(r.memTotal)
	out.Limits = append(out.Limits, api.HostLimit{
		Resource: api.HostMemory, Unit: "bytes", Used: r.memTotal - r.memAvail, Limit: r.memTotal, RefuseAt: r.memTotal - floor,
		Refusing: r.memAvail-(since+1)*sandboxMemory < floor,
	})
	for _, id := range ids {
		if sd, ok := d.sandboxDisk(id); ok {
			out.Sandboxes = append(out.Sandboxes, sd)
		}
	}
	return out, nil
}

// sandboxDisk is the disk use of sandbox id, when it has a disk of its own.
func (d *Driver) sandboxDisk(id string) (api.SandboxDisk, bool) {
	if d.storage != StorageLoop || !validID.MatchString(id) {
		return api.SandboxDisk{}, false
	}
	var fs unix.Statfs_t
	mnt := filepath.Join(d.sandboxDir(id), diskMount)
	if mounted, err := loopdisk.IsMountPoint(mnt); err != nil || !mounted {
		return api.SandboxDisk{}, false
	}
	if err := unix.Statfs(mnt, &fs); err != nil {
		return api.SandboxDisk{}, false
	}
	return api.SandboxDisk{
		ID: id, UsedBytes: int64(fs.Blocks-fs.Bfree) * fs.Bsize, QuotaBytes: int64(fs.Blocks) * fs.Bsize,
		Frozen: d.frozen.has(id), FrozenReason: d.frozen.cause(id),
	}, true
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
