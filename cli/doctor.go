package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Check results of boxkite doctor.
const (
	checkOK   = "ok"
	checkWarn = "warn" // sandboxes work, with less isolation or fewer limits
	checkFail = "fail" // local sandboxes cannot work until it is fixed
)

// The oldest Linux the jail runs on: it builds mounts with mount_setattr(2),
// new in 5.12.
const minKernelMajor, minKernelMinor = 5, 12

// A doctorCheck is one line of boxkite doctor.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"` // what to do about a warn or fail
}

type doctorReport struct {
	OK     bool          `json:"ok"` // no check failed
	Checks []doctorCheck `json:"checks"`
}

func newDoctorCmd(app *App) *cobra.Command {
	var out outputFlags
	var root string
	cmd := &cobra.Command{
		Use:     "doctor",
		Example: `  boxkite doctor`,
		Short:   "Check that this machine can run local sandboxes, and say what to fix",
		Long: `Check what the local server's sandboxes need from this machine: the kernel,
user namespaces, cgroups, seccomp, filesystems, loop devices for storage
quotas, the boxkite-server, boxkite-sidecar and boxkite-bastion binaries,
and, when the local server is up, that its bastion answers and the
sidecar protocol its sandboxes speak (one started before an upgrade
keeps an older sidecar until forked); and the host's
own limits, which run out before the sandboxes' do: tasks (kernel.pid_max,
kernel.threads-max), loop devices, inotify instances and watches, and the
free disk space where the server keeps its state, each with what to raise.

Each check is ok, warn (sandboxes work with weaker isolation or fewer
limits) or fail (they cannot work until it is fixed). Exits 1 when a check
fails, 0 otherwise.`,
		GroupID: groupLocal,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			rep := diagnose(root)
			if root == "/" {
				// The running bastion is this machine's, not a fake root's.
				if cfg, err := app.Config(); err == nil && cfg.Local {
					rep.Checks = append(rep.Checks, doctorBastion(pathsFor(cfg.Home), cfg.Bastion))
					if c, ok := doctorSidecars(cmd.Context(), app); ok {
						rep.Checks = append(rep.Checks, c)
					}
					rep.OK = countChecks(rep.Checks, checkFail) == 0
				}
			}
			if asJSON {
				err = out.write(app.IO, rep)
			} else {
				err = writeDoctor(app, rep)
			}
			if err != nil {
				return err
			}
			if n := countChecks(rep.Checks, checkFail); n > 0 {
				return &exitStatus{
					code: exitError, msg: fmt.Sprintf("%d of %d checks failed", n, len(rep.Checks)),
					hint: "do what each failed check's fix: line says, then run 'boxkite doctor' again",
				}
			}
			return nil
		},
	}
	out.register(cmd, doctorReport{})
	// Tests point the checks at a fake /proc, /sys and /dev.
	cmd.Flags().StringVar(&root, "root", "/", "read the host's files under `dir`")
	_ = cmd.Flags().MarkHidden("root")
	return cmd
}

func writeDoctor(app *App, rep doctorReport) error {
	w := newTable(app.IO.Out)
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "%s\t%s\t%s\n", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "\t\tfix: %s\n", c.Fix)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if rep.OK {
		msg := "this machine can run local sandboxes"
		if n := countChecks(rep.Checks, checkWarn); n > 0 {
			msg += fmt.Sprintf(" (warnings: %d)", n)
		}
		fmt.Fprintln(app.IO.Out, msg)
	}
	return nil
}

func countChecks(cs []doctorCheck, status string) int {
	n := 0
	for _, c := range cs {
		if c.Status == status {
			n++
		}
	}
	return n
}

// A doctorHost is the machine under examination, its files read below root.
type doctorHost struct {
	root string
	euid int
}

func (h doctorHost) read(p string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(h.root, p))
	return strings.TrimSpace(string(b)), err == nil
}

func (h doctorHost) exists(p string) bool {
	_, err := os.Stat(filepath.Join(h.root, p))
	return err == nil
}

// diagnose runs every check against the host whose files are under root.
func diagnose(root string) doctorReport {
	h := doctorHost{root: root, euid: -1}
	if status, ok := h.read("proc/self/status"); ok {
		h.euid = statusUID(status)
	}
	checks := []doctorCheck{
		h.kernel(), h.privileges(), h.userNamespaces(), h.cgroups(), h.seccomp(),
		h.filesystems(), h.storage(), h.pause(), doctorCompanions(),
	}
	checks = append(checks, h.hostLimitChecks()...)
	return doctorReport{OK: countChecks(checks, checkFail) == 0, Checks: checks}
}

// statusUID returns the effective uid from /proc/<pid>/status, or -1.
func statusUID(status string) int {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				if uid, err := strconv.Atoi(f[1]); err == nil {
					return uid
				}
			}
		}
	}
	return -1
}

func (h doctorHost) kernel() doctorCheck {
	c := doctorCheck{Name: "kernel", Status: checkOK}
	release, ok := h.read("proc/sys/kernel/osrelease")
	if !ok {
		return doctorCheck{
			Name: "kernel", Status: checkFail, Detail: "not Linux (no /proc/sys/kernel/osrelease)",
			Fix: "run local sandboxes on Linux; elsewhere use a hosted boxkite server (--url)",
		}
	}
	c.Detail = "Linux " + release
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil || major < minKernelMajor || (major == minKernelMajor && minor < minKernelMinor) {
		c.Status = checkFail
		c.Fix = fmt.Sprintf("upgrade to Linux %d.%d or later: the jail needs mount_setattr(2)", minKernelMajor, minKernelMinor)
	}
	return c
}

func (h doctorHost) privileges() doctorCheck {
	if h.euid == 0 {
		return doctorCheck{Name: "privileges", Status: checkOK, Detail: "root: each sandbox gets its own id range, cgroup limits and a disk quota"}
	}
	return doctorCheck{
		Name: "privileges", Status: checkWarn,
		Detail: fmt.Sprintf("uid %d: sandboxes map a single id, get no cgroup limits, and keep /workspace in memory", h.euid),
		Fix:    "run 'boxkite up' as root for the full isolation",
	}
}

func (h doctorHost) userNamespaces() doctorCheck {
	c := doctorCheck{Name: "user namespaces", Status: checkOK}
	limit, ok := h.read("proc/sys/user/max_user_namespaces")
	if !ok {
		return doctorCheck{
			Name: c.Name, Status: checkFail, Detail: "the kernel has no user namespaces",
			Fix: "use a kernel built with CONFIG_USER_NS",
		}
	}
	c.Detail = "max_user_namespaces=" + limit
	if limit == "0" {
		c.Status, c.Fix = checkFail, "sysctl -w user.max_user_namespaces=15000"
		return c
	}
	if h.euid == 0 {
		return c // the rest restricts unprivileged users only
	}
	if v, ok := h.read("proc/sys/kernel/unprivileged_userns_clone"); ok && v == "0" {
		c.Status, c.Detail = checkFail, c.Detail+", unprivileged_userns_clone=0"
		c.Fix = "sysctl -w kernel.unprivileged_userns_clone=1, or run 'boxkite up' as root"
	}
	if v, ok := h.read("proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
		c.Status, c.Detail = checkFail, c.Detail+", apparmor_restrict_unprivileged_userns=1"
		c.Fix = "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile allowing userns for boxkite-sidecar), or run 'boxkite up' as root"
	}
	return c
}

func (h doctorHost) seccomp() doctorCheck {
	actions, ok := h.read("proc/sys/kernel/seccomp/actions_avail")
	if !ok || !slices.Contains(strings.Fields(actions), "errno") {
		return doctorCheck{
			Name: "seccomp", Status: checkFail, Detail: "no seccomp filters",
			Fix: "use a kernel built with CONFIG_SECCOMP_FILTER: every sandbox runs under a seccomp filter",
		}
	}
	return doctorCheck{Name: "seccomp", Status: checkOK, Detail: "filters with " + strings.Join(strings.Fields(actions), " ")}
}

// fsTypes lists /proc/filesystems.
func (h doctorHost) fsTypes() []string {
	s, _ := h.read("proc/filesystems")
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f[len(f)-1])
		}
	}
	return out
}

func (h doctorHost) filesystems() doctorCheck {
	have := h.fsTypes()
	c := doctorCheck{Name: "filesystems", Status: checkOK}
	var found, missing []string
	for _, fs := range []string{"tmpfs", "overlay", "ext4"} {
		if slices.Contains(have, fs) {
			found = append(found, fs)
		} else {
			missing = append(missing, fs)
		}
	}
	c.Detail = strings.Join(found, ", ")
	switch {
	case !slices.Contains(have, "tmpfs"):
		c.Status, c.Fix = checkFail, "use a kernel with tmpfs (CONFIG_TMPFS): every sandbox's /tmp is one"
	case len(missing) > 0:
		c.Status = checkWarn
		c.Fix = "missing " + strings.Join(missing, ", ") + ": load the modules (modprobe overlay ext4); storage quotas need ext4"
	}
	if c.Detail == "" {
		c.Detail = "none found"
	}
	return c
}

// storage says which storage quota the local driver will use.
func (h doctorHost) storage() doctorCheck {
	c := doctorCheck{Name: "storage quotas", Status: checkWarn, Detail: "tmpfs: /workspace is held in memory"}
	switch {
	case h.euid != 0:
		c.Fix = "run 'boxkite up' as root for disk-backed quotas"
	case !h.exists("dev/loop-control"):
		c.Fix = "load the loop module (modprobe loop) for disk-backed quotas"
	case !slices.Contains(h.fsTypes(), "ext4"):
		c.Fix = "load the ext4 module (modprobe ext4) for disk-backed quotas"
	case h.mkfs() == "":
		c.Fix = "install e2fsprogs (mkfs.ext4) for disk-backed quotas"
	default:
		return doctorCheck{Name: c.Name, Status: checkOK, Detail: "loop-mounted ext4 images (" + h.mkfs() + ")"}
	}
	return c
}

// mkfs finds mkfs.ext4 the way the local driver does: on PATH, then in the
// sbin directories a user's PATH often lacks.
func (h doctorHost) mkfs() string {
	if h.root == "/" {
		if p, err := exec.LookPath("mkfs.ext4"); err == nil {
			return p
		}
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if isExecutableFile(filepath.Join(h.root, dir, "mkfs.ext4")) {
			return filepath.Join(dir, "mkfs.ext4")
		}
	}
	return ""
}

// doctorCompanions checks for the binaries `boxkite up` starts.
func doctorCompanions() doctorCheck {
	c := doctorCheck{Name: "binaries", Status: checkOK}
	var found []string
	for _, name := range []string{serverBinary, sidecarBinary, bastionBinary} {
		p, err := findCompanion(name)
		if err != nil {
			c.Status = checkFail
			c.Fix = "install them with 'go install ./cmd/...' in a boxkite checkout, or unpack a release archive next to boxkite"
			found = append(found, name+" not found")
			continue
		}
		found = append(found, p)
	}
	c.Detail = strings.Join(found, ", ")
	return c
}

// A doctorCgroupMount is a cgroup filesystem in mountinfo.
type doctorCgroupMount struct {
	point, root string
	v2          bool
	controllers []string // v1: from the mount options
}

func (h doctorHost) cgroupMounts() []doctorCgroupMount {
	s, _ := h.read("proc/self/mountinfo")
	var out []doctorCgroupMount
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if !ok || len(a) < 5 || len(b) < 3 || (b[0] != "cgroup" && b[0] != "cgroup2") {
			continue
		}
		m := doctorCgroupMount{root: a[3], point: a[4], v2: b[0] == "cgroup2"}
		if !m.v2 {
			for _, opt := range strings.Split(b[2], ",") {
				if slices.Contains([]string{"memory", "pids", "cpu"}, opt) {
					m.controllers = append(m.controllers, opt)
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// cgroups reports the hierarchy the driver will use and whether the
// controllers its limits need are there.
func (h doctorHost) cgroups() doctorCheck {
	c := doctorCheck{Name: "cgroups", Status: checkOK}
	var ownV2 string // our cgroup2 path, from the "0::" line
	self, _ := h.read("proc/self/cgroup")
	for _, line := range strings.Split(self, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			ownV2 = p
		}
	}
	var v1, v2 []string // controllers found
	for _, m := range h.cgroupMounts() {
		if !m.v2 {
			v1 = append(v1, m.controllers...)
			continue
		}
		rel, ok := strings.CutPrefix(ownV2, m.root)
		if !ok {
			continue
		}
		if ctl, ok := h.read(filepath.Join(m.point, rel, "cgroup.controllers")); ok {
			v2 = strings.Fields(ctl)
		}
	}
	switch {
	case slices.Contains(v2, "memory") && slices.Contains(v2, "pids"):
		c.Detail = "v2, controllers " + strings.Join(v2, " ")
	case slices.Contains(v1, "memory") && slices.Contains(v1, "pids"):
		slices.Sort(v1)
		c.Detail = "v1, controllers " + strings.Join(slices.Compact(v1), " ")
	default:
		c.Status, c.Detail = checkWarn, "no memory and pids controllers found"
		c.Fix = "mount cgroup2 (or the v1 memory, pids and cpu controllers) and enable them for this cgroup; sandboxes run without limits meanwhile"
	}
	if c.Status == checkOK && h.euid != 0 {
		c.Status, c.Fix = checkWarn, "the local driver sets cgroup limits only as root: run 'boxkite up' as root"
	}
	return c
}

// doctorBastion checks the local bastion that up started: running, and
// answering with its SSH banner at the address local.toml records.
func doctorBastion(p localPaths, addr string) doctorCheck {
	c := doctorCheck{Name: "bastion", Status: checkOK}
	server, _ := runningServer(p)
	pid, _ := runningBastion(p)
	switch {
	case server == 0 && pid == 0:
		c.Status, c.Detail = checkWarn, "not running (the local server is not up)"
		c.Fix = "run 'boxkite up': it starts the server and the bastion"
	case pid == 0 || addr == "":
		c.Status, c.Detail = checkFail, "not running, so ssh to sandboxes is off"
		c.Fix = "run 'boxkite up' again to start it; its log is " + p.bastionLog
	default:
		if err := probeBastion(addr, p.bastionHostKey+".pub", 2*time.Second); err != nil {
			c.Status, c.Detail = checkFail, fmt.Sprintf("pid %d does not answer at %s: %v", pid, addr, err)
			c.Fix = "run 'boxkite down' and then 'boxkite up'; its log is " + p.bastionLog
			break
		}
		c.Detail = fmt.Sprintf("answering at %s (pid %d)", addr, pid)
	}
	return c
}
