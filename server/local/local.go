//go:build linux

package local

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/local/idrange"
	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
	"golang.org/x/sys/unix"
)

// DefaultHealthTimeout bounds Create's wait for a new sidecar's /health.
const DefaultHealthTimeout = 30 * time.Second

// Defaults for zero Config fields.
const (
	DefaultPidsLimit = 512 // tasks per sandbox, threads included
	DefaultStorageGB = 5   // quota of /workspace and outputs together
	gib              = 1 << 30
)

// DefaultSizes are the size presets: CPUs and memory per sandbox.
func DefaultSizes() map[string]jail.Limits {
	return map[string]jail.Limits{
		api.SizeSmall:  {CPUs: 1, Memory: 1 * gib},
		api.SizeMedium: {CPUs: 2, Memory: 2 * gib},
		api.SizeLarge:  {CPUs: 4, Memory: 4 * gib},
	}
}

// Cgroup modes (Config.Cgroups).
const (
	CgroupsAuto = ""    // limits when running as root and cgroups are mounted; else a warning
	CgroupsOff  = "off" // never
)

// Config configures the local driver.
type Config struct {
	StateDir    string       // each sandbox lives in StateDir/sandboxes/<id>
	SidecarPath string       // the boxkite-sidecar binary; "" means next to this executable, else $PATH
	Log         *slog.Logger // nil means slog.Default()

	// SidecarCopies is where a root driver runs the sidecar binary from: a
	// byte-identical copy on a tmpfs whose files take huge pages, mounted
	// there by the first server that needs it and shared by every server
	// of the host (sidecarcopy.go); "" means DefaultSidecarCopies,
	// SidecarCopiesOff the binary where it is. Without root, huge pages
	// or room there, the binary runs where it is.
	SidecarCopies string

	// IDRangeDir, IDRangeFirst and IDRangeCount lay out the host uid and
	// gid ranges a root driver leases to its sandboxes, one each
	// (server/local/idrange): IDRangeCount ranges of jail.IDRange ids from
	// IDRangeFirst (a multiple of jail.IDRange), leased through lock files
	// in IDRangeDir. Every boxkite server of a host must use the same
	// directory; ranges of different layouts never overlap as long as each
	// starts at a multiple of jail.IDRange. Zero values mean
	// DefaultIDRangeDir, DefaultIDRangeFirst and DefaultIDRangeCount.
	// Ignored when not root: then the jail maps only the caller's own ids.
	IDRangeDir   string
	IDRangeFirst int
	IDRangeCount int
	// LegacyIDBase is the range every root jail shared before per-sandbox
	// ranges; a volume whose files it owns is moved to canonical ids when
	// first mounted. 0 means LegacyIDBase.
	LegacyIDBase int
	// TmpSize is the size of each sandbox's /tmp and /dev/shm in bytes; 0
	// means jail.DefaultTmpSize.
	TmpSize int64
	// HealthTimeout bounds how long Create waits for /health; 0 means
	// DefaultHealthTimeout.
	HealthTimeout time.Duration

	// Sizes maps a size preset (api.SizeSmall, ...) to its cgroup limits;
	// nil means DefaultSizes(). A zero Pids takes PidsLimit.
	Sizes map[string]jail.Limits
	// PidsLimit caps each sandbox's tasks; 0 means DefaultPidsLimit.
	PidsLimit int64
	// Cgroups is CgroupsAuto or CgroupsOff.
	Cgroups string

	// StorageGB is the quota of a sandbox whose Spec.StorageGB is 0, in GiB;
	// 0 means DefaultStorageGB. MaxStorageGB, when set, caps every quota.
	StorageGB, MaxStorageGB float64
	// Storage is the quota mechanism: StorageAuto, StorageLoop or StorageTmpfs.
	Storage string

	// MaxExecCount and MaxExecSeconds are each sandbox's exec budget
	// (reference §2.4): 0 means the sidecar's default (500 calls, 3600 s),
	// negative no limit.
	MaxExecCount, MaxExecSeconds int

	// Host bounds what sandboxes may take of the host: the free-space
	// watermark, tasks, loop devices, memory (capacity.go).
	Host HostLimits

	// WarmPool is how many sandboxes of the default size and storage are
	// kept started ahead of need and handed out by Create (pool.go); 0
	// means none.
	WarmPool int

	// Prepared is how many cold creates' resources of the default size and
	// storage (id range, disk and its mount, cgroups) are made ahead of
	// need (prepared.go); 0 means none. Loop storage only.
	Prepared int

	// Clones is how sandbox disks are copied for snapshots, forks and new
	// disks: ClonesOff (copies), ClonesAuto or ClonesXFS (FICLONE on a
	// loop-mounted XFS, cow.go).
	Clones string
}

// Driver runs each sandbox as a jailed boxkite-sidecar process. A Driver is
// safe for concurrent use. Its sandboxes outlive it: a new Driver on the same
// StateDir finds them with List and can Delete them.
type Driver struct {
	cfg     Config
	log     *slog.Logger
	sidecar string          // the binary jails and the spawner execute: SidecarPath's, or its copy
	copy    *sidecarCopy    // the copy d.sidecar names, held; nil when none
	root    bool            // the driver runs as root and maps a uid range per sandbox
	ids     *idrange.Ranges // root only

	// spawner clones jails from a small helper process, not from this
	// (large) one (jail.Spawner); nil when not root.
	spawner *jail.Spawner

	cgroups *jail.Cgroups    // nil: no cgroup limits
	storage string           // StorageLoop or StorageTmpfs
	images  *loopdisk.Images // loop only
	data    string           // holds sandboxes/, pool/, images/, snapshots/: StateDir, or the clone pool (cow.go)
	// moved: sandboxes an earlier start left in the other root (cow.go).
	moved movedSandboxes
	// cow grows the clone pool with the host filesystem (cow.go).
	cow poolGrowth

	mu       sync.Mutex
	children map[string]<-chan struct{} // jails this process started, closed once reaped

	pool *pool // warm sandboxes (pool.go)
	// prepared holds cold creates' resources made ahead (prepared.go).
	prepared *preparedPool

	volMu sync.Mutex // serialises mounting and deleting volumes (volumes.go)
	// egress holds the egress listeners of sandboxes this process
	// created (egress.go); a restarted driver has none.
	egress egress.Listeners

	loss      *lossWatch  // sandboxes whose sidecars are watched (watch.go)
	capacity  capacity    // the host's use of its limits (capacity.go)
	disks     diskHandles // sandbox disks kept open to flush them (storage.go)
	frozen    frozenSet   // sandboxes frozen while the host's disk is full (storage.go)
	snapLocks idLocks     // one snapshot at a time per sandbox (snapshot.go)
	removals  removals    // removals finishing after their answer (removals.go)
	criu      criuCheck   // whether pause mode checkpoint could work (pause.go)
	oom       oomSeen     // one OOM-kill count check at a time (stats.go)
}

var _ model.Driver = (*Driver)(nil)

// New returns a Driver for cfg. It creates StateDir/sandboxes if missing.
func New(cfg Config) (*Driver, error) {
	d := &Driver{cfg: cfg, log: cfg.Log, root: os.Geteuid() == 0, children: map[string]<-chan struct{}{}, loss: newLossWatch()}
	d.capacity = newCapacity(d)
	if d.log == nil {
		d.log = slog.Default()
	}
	if cfg.StateDir == "" {
		return nil, errors.New("new local driver: empty state dir")
	}
	if d.cfg.LegacyIDBase == 0 {
		d.cfg.LegacyIDBase = LegacyIDBase
	}
	if d.root {
		ids, err := idrange.New(cmp.Or(cfg.IDRangeDir, DefaultIDRangeDir), cmp.Or(cfg.IDRangeFirst, DefaultIDRangeFirst),
			cmp.Or(cfg.IDRangeCount, DefaultIDRangeCount), cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("new local driver: %w", err)
		}
		d.ids = ids
	}
	if d.cfg.HealthTimeout == 0 {
		d.cfg.HealthTimeout = DefaultHealthTimeout
	}
	path, err := findSidecar(cfg.SidecarPath)
	if err != nil {
		return nil, fmt.Errorf("new local driver: %w", err)
	}
	d.sidecar = path
	d.checkSidecarStatic()
	d.useSidecarCopy()
	if d.root {
		d.spawner = jail.NewSpawner(d.sidecar)
	}
	if d.cfg.Sizes == nil {
		d.cfg.Sizes = DefaultSizes()
	}
	if d.cfg.PidsLimit == 0 {
		d.cfg.PidsLimit = DefaultPidsLimit
	}
	if d.cfg.StorageGB == 0 {
		d.cfg.StorageGB = DefaultStorageGB
	}
	if err := d.chooseIsolation(); err != nil {
		return nil, fmt.Errorf("new local driver: %w", err)
	}
	if err := d.chooseClones(); err != nil {
		return nil, fmt.Errorf("new local driver: %w", err)
	}
	if d.storage == StorageLoop {
		var trim *loopdisk.PoolTrim
		if d.data != d.cfg.StateDir {
			t, err := loopdisk.NewPoolTrim(d.data, d.log)
			if err != nil {
				return nil, fmt.Errorf("new local driver: %w", err)
			}
			trim = t
			go t.Trim() // what an earlier server freed
		}
		d.images = loopdisk.NewImages(filepath.Join(d.data, "images"), trim)
		d.images.EmptyTrash()
	}
	d.emptySnapshotTrash()
	d.finishRemovals()
	if err := os.MkdirAll(d.sandboxesDir(), 0o700); err != nil {
		return nil, fmt.Errorf("new local driver: %w", err)
	}
	if err := d.startPool(); err != nil {
		return nil, fmt.Errorf("new local driver: %w", err)
	}
	d.startPrepared()
	d.watchExisting()
	go d.prepareSpawner()
	return d, nil
}

// prepareSpawner starts the jail spawner's helper ahead of the first
// create; a failure is retried by that create, and said there.
func (d *Driver) prepareSpawner() {
	if d.spawner == nil {
		return
	}
	if err := d.spawner.Prepare(); err != nil {
		d.log.Warn("start the jail spawner", "err", err)
	}
}

// useSidecarCopy points d.sidecar at its copy on the huge-page tmpfs
// (Config.SidecarCopies) when a root driver can make one; else it stays,
// and the log says why.
func (d *Driver) useSidecarCopy() {
	if !d.root || d.cfg.SidecarCopies == SidecarCopiesOff {
		return
	}
	c, err := copySidecar(cmp.Or(d.cfg.SidecarCopies, DefaultSidecarCopies), d.sidecar)
	if err != nil {
		d.log.Info("the sidecar runs from its own file, not a huge-page copy: each jail start maps it in 4 KiB pages", "sidecar", d.sidecar, "err", err)
		return
	}
	d.log.Debug("the sidecar runs from its huge-page copy", "sidecar", d.sidecar, "copy", c.Path())
	d.sidecar, d.copy = c.Path(), c
}

// chooseIsolation settles the cgroup and storage quota mechanisms, saying
// in the log what is missing and what that costs.
func (d *Driver) chooseIsolation() error {
	switch d.cfg.Cgroups {
	case CgroupsOff:
	case CgroupsAuto:
		if !d.root {
			d.log.Warn("no cgroup limits (memory, CPU, pids): not running as root")
			break
		}
		cg, err := jail.DetectCgroups("/")
		if err == nil {
			err = cg.Prepare()
		}
		if err != nil {
			d.log.Warn("no cgroup limits (memory, CPU, pids)", "err", err)
			break
		}
		d.cgroups = cg
		d.log.Debug("cgroup limits", "cgroups", cg.Version())
	default:
		return fmt.Errorf("unknown cgroups mode %q", d.cfg.Cgroups)
	}
	why := loopdisk.LoopAvailable(d.root)
	switch d.cfg.Storage {
	case StorageAuto:
		d.storage = StorageLoop
		if why != "" {
			d.storage = StorageTmpfs
			d.log.Warn("storage quotas use tmpfs, which holds /workspace in memory", "why", why)
		}
	case StorageLoop:
		if why != "" {
			return fmt.Errorf("loop-mounted storage: %s", why)
		}
		d.storage = StorageLoop
	case StorageTmpfs:
		d.storage = StorageTmpfs
	default:
		return fmt.Errorf("unknown storage mode %q", d.cfg.Storage)
	}
	return nil
}

// findSidecar resolves the sidecar binary: as configured, else next to the
// running executable (go install puts them side by side), else on $PATH.
func findSidecar(path string) (string, error) {
	if path == "" {
		if exe, err := os.Executable(); err == nil {
			sibling := filepath.Join(filepath.Dir(exe), "boxkite-sidecar")
			if _, err := os.Stat(sibling); err == nil {
				path = sibling
			}
		}
	}
	if path == "" {
		path = "boxkite-sidecar"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("find sidecar binary: %w", err)
	}
	return filepath.Abs(p)
}

func (d *Driver) sandboxesDir() string { return filepath.Join(d.data, "sandboxes") }

// sandboxDir is sandbox id's directory: in this start's root, or in the
// other one for a sandbox an earlier start left there (cow.go).
func (d *Driver) sandboxDir(id string) string {
	if dir := d.moved.dir(id); dir != "" {
		return dir
	}
	return filepath.Join(d.sandboxesDir(), id)
}

// validID keeps an id safe as a single path element.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// Create starts a jailed sidecar and returns once it answers /health. On
// failure nothing of the sandbox is left behind and the error carries the
// tail of the sidecar's log.
func (d *Driver) Create(ctx context.Context, spec model.Spec) (ep model.Endpoint, err error) {
	if !validID.MatchString(spec.ID) {
		return model.Endpoint{}, fmt.Errorf("create sandbox: invalid id %q", spec.ID)
	}
	lim, ok := d.limits(spec.Size)
	if !ok {
		return model.Endpoint{}, fmt.Errorf("create sandbox: unknown size %q", spec.Size)
	}
	if ep, handled, err := d.ClaimWarm(ctx, spec, nil, nil); handled {
		return ep, err // tracked by claimWarm
	}
	dir := d.sandboxDir(spec.ID)
	p, ready, err := d.takePrepared(ctx, spec, dir)
	if p.js.NetNS != nil {
		// A slot's network namespace serves this jail alone: once started
		// the jail holds it, and a failed start drops it with the slot.
		defer p.js.NetNS.Close()
	}
	if err != nil && !ready {
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	if !ready {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
		}
	}
	defer func() {
		if err != nil {
			if derr := d.Delete(context.WithoutCancel(ctx), spec.ID); derr != nil {
				d.log.Error("clean up failed sandbox", "id", spec.ID, "err", derr)
			}
		}
	}()
	if !ready {
		p, err = d.prepare(spec, dir, lim)
	}
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	defer p.lease.Close() // the jail holds its own copy once started
	token, err := newToken()
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	ep = model.Endpoint{Network: "unix", Address: filepath.Join(dir, sidecarSocket), Token: token}
	// The control plane's own client asks, when it gives one (spec.Via),
	// so the connection it opens serves the first exec.
	var client *http.Client
	if spec.Via != nil {
		if client, err = spec.Via.Client(spec.ID, ep); err != nil {
			return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
		}
	}
	done, err := d.start(p, token, dir)
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	if spec.Started != nil {
		// The listener exists and takes connections: a request sent now
		// waits in its backlog until the sidecar serves.
		spec.Started(ep)
	}
	if err := waitHealthy(ctx, client, ep, d.cfg.HealthTimeout, done); err != nil {
		return model.Endpoint{}, fmt.Errorf("create sandbox %s: %w%s", spec.ID, err, logTail(dir))
	}
	d.log.Debug("sandbox created", "id", spec.ID)
	d.trackClaimed(spec.ID, p.disksOpen)
	return ep, nil
}

// limits returns the cgroup limits of a size preset ("" is small).
func (d *Driver) limits(size string) (jail.Limits, bool) {
	if size == "" {
		size = api.SizeSmall
	}
	lim, ok := d.cfg.Sizes[size]
	if lim.Pids == 0 {
		lim.Pids = d.cfg.PidsLimit
	}
	return lim, ok
}

// quota returns the storage quota in bytes for a requested size in GiB.
func (d *Driver) quota(storageGB float64) int64 {
	if storageGB <= 0 {
		storageGB = d.cfg.StorageGB
	}
	if d.cfg.MaxStorageGB > 0 {
		storageGB = min(storageGB, d.cfg.MaxStorageGB)
	}
	const mib = 1 << 20
	return max(16*mib, int64(storageGB*gib)/mib*mib) // whole MiB; ext4 needs a few
}

// A prepared sandbox is ready to start: its jail's spec, its state so far
// and, as root, the lease on its host id range, which the caller closes
// once the jail holds it (or did not start).
type prepared struct {
	js    jail.Spec
	st    state
	lease *idrange.Lease
	// disksOpen: the prepared pool opened and flushed the disk ahead, and
	// the sandbox holds it already (moveDisks), so track need not.
	disksOpen bool
}

// prepare makes the sandbox's host side: its host id range, directories,
// disk and cgroup, and records them in state.json before anything runs, so
// Delete can undo a half-made sandbox. The run dir is the server's (see
// sockets.go); as root its group is the jail's root, so the sidecar, and
// not the sandbox user, may look in. The workspace and outputs belong to
// the sandbox user's canonical ids (jail.UID: the jail sees them through
// idmapped mounts).
func (d *Driver) prepare(spec model.Spec, dir string, lim jail.Limits) (p prepared, err error) {
	quota := d.quota(spec.StorageGB)
	js := jail.Spec{
		ID:       spec.ID,
		Hostname: "sandbox",
		RunDir:   filepath.Join(dir, "run"),
		UID:      jail.DefaultUID,
		GID:      jail.DefaultUID,
		TmpSize:  d.cfg.TmpSize,
		MaxProcs: int(max(1, lim.Pids-lim.Pids/8)), // leave the sidecar room to fork
		// A backstop above the largest writable filesystem, so a full one
		// says ENOSPC rather than killing the writer with SIGXFSZ.
		MaxFileSize: max(quota, cmp.Or(d.cfg.TmpSize, jail.DefaultTmpSize)) + 1<<20,

		MaxExecCount:   d.cfg.MaxExecCount,
		MaxExecSeconds: d.cfg.MaxExecSeconds,

		Image: spec.ImageRoot,
	}
	var st state
	if d.ids != nil {
		if p.lease, err = d.ids.Acquire(spec.ID); err != nil {
			return p, err
		}
		defer func() {
			if err != nil {
				_ = p.lease.Close()
			}
		}()
		js.HostIDBase, st.HostIDBase = p.lease.Base(), p.lease.Base()
	}
	if err = d.makeRunDir(js.RunDir, js.HostIDBase); err != nil {
		return p, err
	}
	switch d.storage {
	case StorageTmpfs:
		js.WorkspaceTmpfs = quota
	case StorageLoop:
		mnt := filepath.Join(dir, diskMount)
		if spec.FromSnapshot != "" {
			err = d.restoreDisk(filepath.Join(dir, diskImage), spec.FromSnapshot)
		} else {
			err = d.images.CreateWith(filepath.Join(dir, diskImage), quota, d.diskLayout(js.UID))
		}
		if err != nil {
			return p, err
		}
		if err := loopdisk.MountNew(filepath.Join(dir, diskImage), mnt); err != nil {
			return p, err
		}
		js.Workspace, js.Outputs = filepath.Join(mnt, "workspace"), filepath.Join(mnt, "outputs")
		if err := clearMountPoints(js.Workspace, spec.MountPoints); err != nil {
			return p, err
		}
		for _, data := range []string{js.Workspace, js.Outputs} {
			if exists(data) {
				continue // the template's, or restored with the disk
			}
			// A snapshot of a disk without them, or a template mkfs.ext4
			// could not populate.
			if err := d.makeDir(data, 0o755, js.UID); err != nil {
				return p, err
			}
		}
	}
	if js.Binds, err = d.volumeBinds(spec.Volumes); err != nil {
		return p, err
	}
	for _, v := range spec.Volumes {
		st.Volumes = append(st.Volumes, v.ID)
	}
	if spec.Egress != nil {
		if err := d.listenEgress(spec.ID, js, spec.Egress); err != nil {
			return p, err
		}
	}
	if d.cgroups != nil {
		cg, err := d.cgroups.Create(d.cgroupName(spec.ID), lim)
		if err != nil {
			return p, err
		}
		st.Cgroup = cg
	}
	jsCopy := js
	st.Jail, st.Limits = &jsCopy, lim
	p.js, p.st = js, st
	return p, writeState(dir, st)
}

// diskLayout is what a new sandbox disk holds: the workspace and outputs
// directories, owned by the sandbox user's canonical id hostID as makeDir
// would make them.
func (d *Driver) diskLayout(hostID int) loopdisk.Layout {
	l := loopdisk.Layout{Dirs: []string{"workspace", "outputs"}, UID: hostID, GID: hostID}
	if !d.root {
		l.UID, l.GID = os.Getuid(), os.Getgid()
	}
	return l
}

// makeDir makes a host directory owned by uid and gid hostID when the
// driver is root; else it stays the caller's (then the jail's root is the
// caller).
func (d *Driver) makeDir(path string, mode os.FileMode, hostID int) error {
	if err := os.Mkdir(path, mode); err != nil {
		return err
	}
	if !d.root {
		return nil
	}
	return os.Chown(path, hostID, hostID)
}

// makeRunDir makes the sandbox's run dir, which the jail sees read-only
// at /run/boxkite: the server's, and as root readable by the jail's root
// (group hostID) alone.
func (d *Driver) makeRunDir(path string, hostID int) error {
	if !d.root {
		return os.Mkdir(path, 0o700)
	}
	if err := os.Mkdir(path, 0o750); err != nil {
		return err
	}
	// The directory was just made in the sandbox's own (0700) directory,
	// which no jail reaches: nothing can have replaced it.
	return os.Chown(path, 0, hostID)
}

// cgroupName names a sandbox's cgroup: its id, made unique among every
// driver on the host (each with its own state directory) by a hash.
func (d *Driver) cgroupName(id string) string {
	return id + "." + stateDirTag(d.cfg.StateDir)
}

// start launches the jail in its cgroup, hands it the lease on its id
// range to hold, records its state and reaps it in the background.
// initArgs follow the sidecar's init subcommand.
func (d *Driver) start(p prepared, token, dir string, initArgs ...string) (<-chan struct{}, error) {
	js, st := p.js, p.st
	logf, err := os.OpenFile(filepath.Join(dir, "sidecar.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the jail holds its own copy
	cmd := &exec.Cmd{Path: d.sidecar, Args: append([]string{"boxkite-sidecar", "init"}, initArgs...), Stdout: logf, Stderr: logf}
	if p.lease != nil {
		cmd.ExtraFiles = []*os.File{p.lease.File()} // held by the jail's init until it dies
	}
	listener, err := listenSidecar(dir)
	if err != nil {
		return nil, err
	}
	defer listener.Close() // the jail holds its own copy
	launch := jail.Start
	if d.spawner != nil {
		launch = d.spawner.Start
	}
	// The jail's clone places it in its cgroup before it runs anything,
	// no pid written to cgroup.procs (issue 27; jail.Start).
	js.CgroupDirs = st.Cgroup.Dirs
	if err := launch(cmd, js, token, listener, nil); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	reap := func() {
		_ = cmd.Wait() // the exit status is in sidecar.log if anywhere
		close(done)
		d.childExited(done) // the loss watch (watchSandbox) has no watcher of its own
	}
	pid := cmd.Process.Pid
	st.PID, st.Socket, st.Token = pid, filepath.Join(dir, sidecarSocket), token
	st.StartTime, err = startTime(pid)
	// Reaped once it exits, seen through the poller (watch.go) rather
	// than by a thread blocked in waitid for the sandbox's whole life.
	if err != nil || reapOnExit(pid, st.StartTime, reap) != nil {
		go reap()
	}
	// Keyed by the sandbox's directory, its id: a prepared slot's spec
	// still carries the slot's name.
	d.mu.Lock()
	d.children[filepath.Base(dir)] = done
	d.mu.Unlock()
	if err == nil {
		err = writeState(dir, st)
	}
	if err != nil {
		// Without a state file nothing could find the jail again.
		_ = cmd.Process.Kill()
		<-done
		// A jail that failed at once is gone before its start time could be
		// read; its log says why.
		return nil, fmt.Errorf("%w%s", err, logTail(dir))
	}
	return done, nil
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Delete kills the sandbox's processes and removes its cgroup, disk and
// state; the disk's unmount and the files' removal finish after it
// returns (removals.go). A gone sandbox is not an error.
func (d *Driver) Delete(ctx context.Context, id string) error {
	if !validID.MatchString(id) {
		return nil // no such sandbox can exist
	}
	return d.remove(ctx, id, d.sandboxDir(id))
}

// remove deletes the jail in dir, a sandbox or a warm pool member (pool.go)
// that this driver's children know as id.
func (d *Driver) remove(ctx context.Context, id, dir string) error {
	d.loss.unwatch(id) // a deletion is not a loss
	d.closeDisks(id)
	d.frozen.set(id, "")
	st, err := readState(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Never started, or half removed: just the files, and a jail
		// whose state this start cannot see (cow.go).
		if err := d.removeOrphanCgroup(ctx, id); err != nil {
			return fmt.Errorf("delete sandbox %s: %w", id, err)
		}
	case err != nil:
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	default:
		// A task frozen by the v1 freezer (a paused sandbox) cannot die
		// until thawed.
		if st.Cgroup.Frozen() {
			_ = st.Cgroup.Freeze(false)
		}
		// Nor can a writer blocked on a filesystem a snapshot froze.
		d.thawDisk(dir)
		if err := d.kill(ctx, id, st); err != nil {
			return fmt.Errorf("delete sandbox %s: %w", id, err)
		}
		if err := st.Cgroup.Remove(ctx); err != nil {
			return fmt.Errorf("delete sandbox %s: %w", id, err)
		}
	}
	d.mu.Lock()
	delete(d.children, id)
	d.mu.Unlock()
	d.egress.Close(id)
	// The disk's unmount, the image and the files: after the answer
	// (removals.go).
	if err := d.removeFiles(dir); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	return nil
}

// kill SIGKILLs the jail's init, which takes its whole PID namespace down,
// and waits until the process is gone.
func (d *Driver) kill(ctx context.Context, id string, st state) error {
	if st.PID == 0 {
		return nil // recorded before the jail started
	}
	fd, err := killPID(st)
	if err != nil || fd < 0 {
		return err
	}
	defer unix.Close(fd)
	d.mu.Lock()
	done := d.children[id]
	d.mu.Unlock()
	if done != nil { // our child: wait until it is reaped, not just dead
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Not our child (this driver restarted): whoever inherited it reaps it.
	return waitPidfd(ctx, fd)
}

// List reports the sandboxes found in the state directory. A sandbox whose
// jail is gone (or whose state file is missing) is reported with Alive false.
func (d *Driver) List(ctx context.Context) ([]model.Observed, error) {
	entries, err := os.ReadDir(d.sandboxesDir())
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && validID.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	ids = d.moved.appendIDs(ids)
	var out []model.Observed
	for _, id := range ids {
		o := model.Observed{ID: id}
		if st, err := readState(d.sandboxDir(id)); err == nil {
			o.Endpoint = model.Endpoint{Network: "unix", Address: st.Socket, Token: st.Token}
			o.Alive = alive(st)
		}
		out = append(out, o)
	}
	return out, nil
}

// Shutdown deletes every sandbox of the state directory concurrently,
// whether or not this Driver started it, and the warm pool, and unmounts
// the volumes (their data stays). `boxkite down` calls it on SIGTERM.
func (d *Driver) Shutdown(ctx context.Context) error {
	d.stopKeeping()
	perr := errors.Join(d.pool.stop(ctx), d.prepared.stop(ctx))
	obs, err := d.List(ctx)
	if err != nil {
		return errors.Join(perr, err)
	}
	errs := make([]error, len(obs), len(obs)+2)
	var wg sync.WaitGroup
	for i, o := range obs {
		wg.Go(func() { errs[i] = d.Delete(ctx, o.ID) })
	}
	wg.Wait()
	// The disks' unmounts, after the deletes' answers: before the clone
	// pool holding their images goes.
	errs = append(errs, d.removals.wait(ctx))
	// Volumes and snapshots outlive the server, their mounts do not.
	errs = append(errs, d.unmountVolumes(), d.unmountClonePool(), d.spawner.Close(), d.copy.Close())
	return errors.Join(append(errs, perr)...)
}
