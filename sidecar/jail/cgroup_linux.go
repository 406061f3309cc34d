package jail

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Limits are one sandbox's cgroup limits. A zero field is no limit.
type Limits struct {
	CPUs   float64 // CPU time per wall-clock second, e.g. 1.5
	Memory int64   // bytes of memory (and, on cgroup v1, memory plus swap)
	Pids   int64   // tasks, threads included
}

// cpuPeriod is the CFS period in microseconds quotas are expressed against.
const cpuPeriod = 100000

// cgroupParent is the directory, under the driver's own cgroup of each
// hierarchy, that holds every sandbox's cgroup.
const cgroupParent = "boxkite"

// controllers are the ones Limits needs.
var controllers = []string{"memory", "pids", "cpu"}

// v1Controllers are the v1 hierarchies a sandbox gets a directory in:
// those of Limits, and the freezer's, which pauses it (Freeze).
var v1Controllers = append(slices.Clone(controllers), "freezer")

// Cgroups makes sandbox cgroups below the calling process's own cgroups:
// cgroup v2 when a cgroup2 hierarchy offers the memory and pids
// controllers, else the v1 hierarchies of memory, pids and cpu, plus a
// controller-less cgroup2 one (a hybrid host) only for cgroup.kill. Being
// below our own cgroups is what makes this work under a supervisor that
// gave us a subtree, and keeps the limits nested inside our own.
type Cgroups struct {
	v2      string            // our cgroup in a cgroup2 hierarchy with the controllers; "" in v1 mode
	v1      map[string]string // controller → our cgroup in its v1 hierarchy
	killDir string            // v1 mode: our cgroup in a controller-less cgroup2 hierarchy, or ""
	acct    string            // v1 mode: our cgroup in the cpuacct hierarchy, or "" (Own reads CPU time there)
}

// DetectCgroups finds the calling process's cgroups from
// root/proc/self/mountinfo and root/proc/self/cgroup; root is "/" but for
// tests. It does not check that they are writable.
func DetectCgroups(root string) (*Cgroups, error) {
	mounts, err := cgroupMounts(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("detect cgroups: %w", err)
	}
	own, err := ownCgroups(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil, fmt.Errorf("detect cgroups: %w", err)
	}
	c := &Cgroups{v1: map[string]string{}}
	for _, m := range mounts {
		key := "" // the cgroup2 line of /proc/self/cgroup
		if m.fstype == "cgroup" {
			key = strings.Join(m.controllers, ",")
		}
		path, ok := own[key]
		if !ok {
			continue
		}
		rel, ok := strings.CutPrefix(path, m.root)
		if !ok {
			continue // our cgroup is outside what this mount shows
		}
		dir := filepath.Join(root, m.point, rel)
		if m.fstype == "cgroup2" {
			if c.v2 != "" || c.killDir != "" {
				continue
			}
			if hasControllers(dir, "memory", "pids") {
				c.v2 = dir
			} else {
				c.killDir = dir
			}
			continue
		}
		for _, ctl := range m.controllers {
			if slices.Contains(v1Controllers, ctl) && c.v1[ctl] == "" {
				c.v1[ctl] = dir
			}
			if ctl == "cpuacct" && c.acct == "" {
				c.acct = dir
			}
		}
	}
	if c.v2 != "" {
		c.v1, c.killDir, c.acct = nil, "", ""
	}
	if c.v2 == "" && !slices.ContainsFunc(controllers, func(ctl string) bool { return c.v1[ctl] != "" }) {
		return nil, errors.New("detect cgroups: no memory, pids or cpu controller is mounted")
	}
	return c, nil
}

// Version describes the mode for logs: "v2", or "v1" with the controllers
// found (and "+cgroup.kill" on a hybrid host).
func (c *Cgroups) Version() string {
	if c.v2 != "" {
		return "v2"
	}
	var ctls []string
	for _, ctl := range v1Controllers {
		if c.v1[ctl] != "" {
			ctls = append(ctls, ctl)
		}
	}
	s := "v1 (" + strings.Join(ctls, ",") + ")"
	if c.killDir != "" {
		s += " +cgroup.kill"
	}
	return s
}

// A Cgroup is one sandbox's cgroup, one directory per hierarchy. It is
// plain data so a driver can record it and remove it after a restart.
type Cgroup struct {
	Dirs []string `json:"dirs"`
}

// Create makes the cgroup boxkite/name in every hierarchy and applies
// lim; call Prepare once first. On error, whatever was made is removed
// again.
func (c *Cgroups) Create(name string, lim Limits) (cg Cgroup, err error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return Cgroup{}, fmt.Errorf("create cgroup: invalid name %q", name)
	}
	defer func() {
		if err != nil {
			_ = cg.Remove(context.Background())
			cg = Cgroup{}
		}
	}()
	if c.v2 != "" {
		dir := filepath.Join(c.v2, cgroupParent, name)
		if err := mkdirCgroup(dir); err != nil {
			return cg, err // not ours to remove
		}
		cg.Dirs = append(cg.Dirs, dir)
		return cg, applyV2(dir, lim)
	}
	for _, ctl := range v1Controllers {
		base := c.v1[ctl]
		if base == "" {
			continue
		}
		dir := filepath.Join(base, cgroupParent, name)
		if !slices.Contains(cg.Dirs, dir) { // hierarchies may share controllers
			if err := mkdirCgroup(dir); err != nil {
				return cg, err
			}
			cg.Dirs = append(cg.Dirs, dir)
		}
		if err := applyV1(ctl, dir, lim); err != nil {
			return cg, err
		}
	}
	if c.killDir != "" {
		dir := filepath.Join(c.killDir, cgroupParent, name)
		if err := mkdirCgroup(dir); err != nil {
			return cg, err
		}
		cg.Dirs = append(cg.Dirs, dir)
	}
	return cg, nil
}

// Prepare makes the boxkite parent cgroups. On cgroup v2 it also enables
// the controllers for them, which the "no internal processes" rule forbids
// while our own cgroup holds processes: so this process first moves to a
// leaf of its cgroup, boxkite-server (what systemd's DelegateSubgroup=
// does for a unit). Any other process there makes it fail; then sandboxes
// cannot get limits until the server runs in a cgroup of its own.
func (c *Cgroups) Prepare() error {
	if c.v2 == "" {
		for _, dir := range c.v1 {
			if err := os.Mkdir(filepath.Join(dir, cgroupParent), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("prepare cgroups: %w", err)
			}
		}
		if c.killDir != "" {
			if err := os.Mkdir(filepath.Join(c.killDir, cgroupParent), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("prepare cgroups: %w", err)
			}
		}
		return nil
	}
	enable := c.v2Enable()
	err := writeCgroupFile(c.v2, "cgroup.subtree_control", enable)
	if errors.Is(err, unix.EBUSY) {
		leaf := filepath.Join(c.v2, "boxkite-server")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("prepare cgroups: %w", err)
		}
		if err := writeCgroupFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			return fmt.Errorf("prepare cgroups: %w", err)
		}
		err = writeCgroupFile(c.v2, "cgroup.subtree_control", enable)
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("prepare cgroups: %s holds other processes than this server; run it in a cgroup of its own (systemd: Delegate=yes, DelegateSubgroup=boxkite-server)", c.v2)
		}
	}
	if err != nil {
		return fmt.Errorf("prepare cgroups: %w", err)
	}
	parent := filepath.Join(c.v2, cgroupParent)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("prepare cgroups: %w", err)
	}
	if err := writeCgroupFile(parent, "cgroup.subtree_control", enable); err != nil {
		return fmt.Errorf("prepare cgroups: %w", err)
	}
	return nil
}

// v2Enable is what subtree_control gets: the controllers Limits needs
// that our cgroup has.
func (c *Cgroups) v2Enable() string {
	enable := "+memory +pids"
	if hasControllers(c.v2, "cpu") {
		enable += " +cpu"
	}
	return enable
}

// mkdirCgroup makes dir and its boxkite parent. An existing dir without
// processes (left by a crash) is taken over.
func mkdirCgroup(dir string) error {
	if err := os.Mkdir(filepath.Dir(dir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create cgroup: %w", err)
	}
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if pids, perr := cgroupPids(dir); perr == nil && len(pids) == 0 {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	return nil
}

func applyV2(dir string, lim Limits) error {
	files := map[string]string{}
	if lim.Memory > 0 {
		files["memory.max"] = strconv.FormatInt(lim.Memory, 10)
		files["memory.swap.max"] = "0"
	}
	if lim.Pids > 0 {
		files["pids.max"] = strconv.FormatInt(lim.Pids, 10)
	}
	if lim.CPUs > 0 {
		files["cpu.max"] = strconv.FormatInt(cpuQuota(lim.CPUs), 10) + " " + strconv.Itoa(cpuPeriod)
	}
	for name, v := range files {
		err := writeCgroupFile(dir, name, v)
		if errors.Is(err, fs.ErrNotExist) && (name == "memory.swap.max" || name == "cpu.max") {
			continue // no swap accounting, or no cpu controller: nothing to limit
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func applyV1(ctl, dir string, lim Limits) error {
	switch {
	case ctl == "memory" && lim.Memory > 0:
		v := strconv.FormatInt(lim.Memory, 10)
		if err := writeCgroupFile(dir, "memory.limit_in_bytes", v); err != nil {
			return err
		}
		// memsw (memory plus swap) must be at least the memory limit, so
		// it goes second; it exists only with swap accounting.
		err := writeCgroupFile(dir, "memory.memsw.limit_in_bytes", v)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// v1 counts socket buffers as memory only once given a limit of
		// their own (TCP's, which then holds UDP's too): without it, what
		// a sandbox queues in sockets it never reads is host memory
		// beyond its limit, up to the host-wide tcp_mem and udp_mem, where
		// every process's TCP and UDP start losing data (v2 charges it to
		// memory.max). Set before any task joins:
		// sockets made before are not counted.
		err = writeCgroupFile(dir, "memory.kmem.tcp.limit_in_bytes", v)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	case ctl == "pids" && lim.Pids > 0:
		return writeCgroupFile(dir, "pids.max", strconv.FormatInt(lim.Pids, 10))
	case ctl == "cpu" && lim.CPUs > 0:
		if err := writeCgroupFile(dir, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		return writeCgroupFile(dir, "cpu.cfs_quota_us", strconv.FormatInt(cpuQuota(lim.CPUs), 10))
	}
	return nil
}

func cpuQuota(cpus float64) int64 { return max(1000, int64(cpus*cpuPeriod)) }

// Add moves the process pid (all its threads) into the cgroup.
func (cg Cgroup) Add(pid int) error {
	for _, dir := range cg.Dirs {
		if err := writeCgroupFile(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// Remove kills every process left in the cgroup and removes its
// directories, waiting (until ctx ends) for the processes to go. Missing
// directories are fine: Remove can be repeated.
func (cg Cgroup) Remove(ctx context.Context) error {
	for _, dir := range cg.Dirs {
		// Never act on a path that is not a sandbox cgroup: state files
		// hand these in.
		if !isSandboxCgroup(dir) {
			return fmt.Errorf("remove cgroup: %s is not a boxkite cgroup", dir)
		}
	}
	thawed := false
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		busy, err := cg.tryRemove()
		if err != nil || !busy {
			return err
		}
		// A task frozen by the v1 freezer cannot die until thawed. Read
		// only once a directory held a task: an empty cgroup (the local
		// driver kills and reaps the jail first) is removed without it,
		// two freezer files and nine stats fewer per delete (issue 27).
		if !thawed && cg.Frozen() {
			_ = cg.Freeze(false)
		}
		thawed = true
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove cgroup: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

// isSandboxCgroup reports whether dir names a sandbox's cgroup: a clean
// absolute path whose last element is directly below a boxkite parent
// (Create's .../boxkite/name). Remove and openCgroupPlace act only on
// such paths, which state files and spawn requests hand in: a path such
// as .../boxkite/.. (whose filepath.Dir is .../boxkite) or .../boxkite/.
// names the driver's own cgroup or the parent of every sandbox, and
// killing what is in it would take the server or every sandbox along.
func isSandboxCgroup(dir string) bool {
	return filepath.IsAbs(dir) && filepath.Clean(dir) == dir && filepath.Base(filepath.Dir(dir)) == cgroupParent
}

// tryRemove kills what is left and removes every empty directory; busy
// reports whether some still hold processes.
func (cg Cgroup) tryRemove() (busy bool, err error) {
	for _, dir := range cg.Dirs {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			continue
		case !errors.Is(err, unix.EBUSY):
			return false, fmt.Errorf("remove cgroup: %w", err)
		}
		busy = true
		// cgroup.kill (cgroup2, Linux 5.14) kills the whole subtree at
		// once, new forks included; otherwise signal each process.
		if err := writeCgroupFile(dir, "cgroup.kill", "1"); err == nil {
			continue
		}
		pids, err := cgroupPids(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	return busy, nil
}

// Procs lists the processes in the cgroup's first hierarchy.
func (cg Cgroup) Procs() ([]int, error) {
	if len(cg.Dirs) == 0 {
		return nil, nil
	}
	return cgroupPids(cg.Dirs[0])
}

func cgroupPids(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup: %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func writeCgroupFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("write cgroup %s: %w", name, err)
	}
	_, err = f.WriteString(value)
	err = errors.Join(err, f.Close())
	if err != nil {
		return fmt.Errorf("write cgroup %s %q: %w", filepath.Join(dir, name), value, err)
	}
	return nil
}

func hasControllers(dir string, want ...string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return false
	}
	have := strings.Fields(string(b))
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// A cgroupMount is one line of mountinfo for a cgroup filesystem.
type cgroupMount struct {
	root, point, fstype string
	controllers         []string // v1 only, sorted as /proc/self/cgroup lists them
}

// v1MountOptions are cgroup v1 super options that name no controller.
var v1MountOptions = map[string]bool{
	"rw": true, "ro": true, "none": true, "all": true, "noprefix": true,
	"clone_children": true, "xattr": true, "cpuset_v2_mode": true, "favordynmods": true,
}

func cgroupMounts(mountinfo string) ([]cgroupMount, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root point options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || (b[0] != "cgroup" && b[0] != "cgroup2") {
			continue
		}
		m := cgroupMount{root: unescapeMount(a[3]), point: unescapeMount(a[4]), fstype: b[0]}
		if m.fstype == "cgroup" {
			for _, opt := range strings.Split(b[2], ",") {
				if !v1MountOptions[opt] && (!strings.Contains(opt, "=") || strings.HasPrefix(opt, "name=")) {
					m.controllers = append(m.controllers, opt)
				}
			}
			slices.Sort(m.controllers)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// ownCgroups maps the controller list of each line of /proc/self/cgroup
// (sorted, comma-joined; "" for cgroup2) to our path in that hierarchy.
func ownCgroups(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctls := strings.Split(parts[1], ",")
		slices.Sort(ctls)
		own[strings.Join(ctls, ",")] = parts[2]
	}
	return own, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
