package cli

import (
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Host limits (issue 19): a host runs out of tasks, loop devices, inotify
// instances or disk long before the sandboxes' own limits are reached, so
// doctor says where each stands and what to raise.

// tasksPerIdleSandbox is about what one idle sandbox holds: its jail's two
// Go processes' threads.
const tasksPerIdleSandbox = 16

// defaultWatermark is the server's default free-space watermark (local
// driver), below which creates and uploads are refused.
const defaultWatermark = 1 << 30

// hostLimitChecks are the checks of the host's own limits.
func (h doctorHost) hostLimitChecks() []doctorCheck {
	return []doctorCheck{h.tasks(), h.loopDevices(), h.inotify(), h.diskSpace()}
}

func (h doctorHost) readInt(p string) (int64, bool) {
	s, ok := h.read(p)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// tasks checks kernel.pid_max and kernel.threads-max against how many
// sandboxes they leave room for.
func (h doctorHost) tasks() doctorCheck {
	c := doctorCheck{Name: "host tasks", Status: checkOK}
	pidMax, ok1 := h.readInt("proc/sys/kernel/pid_max")
	threadsMax, ok2 := h.readInt("proc/sys/kernel/threads-max")
	if !ok1 || !ok2 {
		return doctorCheck{Name: c.Name, Status: checkWarn, Detail: "cannot read kernel.pid_max and kernel.threads-max"}
	}
	var used int64
	if load, ok := h.read("proc/loadavg"); ok {
		if f := strings.Fields(load); len(f) > 3 {
			_, total, _ := strings.Cut(f[3], "/")
			used, _ = strconv.ParseInt(total, 10, 64)
		}
	}
	limit := min(pidMax, threadsMax)
	room := max(0, (limit-limit/10-used)/tasksPerIdleSandbox)
	c.Detail = fmt.Sprintf("pid_max=%d threads-max=%d, %d tasks now: room for about %d idle sandboxes", pidMax, threadsMax, used, room)
	if room < 2000 {
		c.Status = checkWarn
		c.Fix = fmt.Sprintf("each sandbox holds about %d tasks and creates are refused (503 host_capacity) a tenth short of the limit; for thousands of sandboxes: sysctl -w kernel.pid_max=4194304 kernel.threads-max=4194304", tasksPerIdleSandbox)
	}
	return c
}

// loopDevices says how many loop devices are in use and how many the
// kernel can make (each sandbox disk and volume takes one).
func (h doctorHost) loopDevices() doctorCheck {
	c := doctorCheck{Name: "loop devices", Status: checkOK}
	if !h.exists("dev/loop-control") {
		c.Detail = "no /dev/loop-control (storage quotas use tmpfs)"
		return c
	}
	devs, _ := filepath.Glob(filepath.Join(h.root, "sys/block/loop*"))
	var used int64
	for _, d := range devs {
		if _, err := os.Stat(filepath.Join(d, "loop", "backing_file")); err == nil {
			used++
		}
	}
	shift := 0
	maxPart, _ := h.readInt("sys/module/loop/parameters/max_part")
	if maxPart > 0 {
		shift = bits.Len64(uint64(maxPart))
	}
	limit := int64(1<<20) >> shift
	c.Detail = fmt.Sprintf("%d in use, made on demand up to %d (max_part=%d); one per sandbox disk and volume", used, limit, maxPart)
	if used >= limit-16 {
		c.Status = checkWarn
		c.Fix = "remove sandboxes and volumes you no longer need; load the loop module with a smaller max_part to allow more devices"
	}
	return c
}

// inotify checks the per-user inotify limits the sandboxes' file watches
// and language servers draw on.
func (h doctorHost) inotify() doctorCheck {
	c := doctorCheck{Name: "inotify", Status: checkOK}
	instances, ok1 := h.readInt("proc/sys/fs/inotify/max_user_instances")
	watches, ok2 := h.readInt("proc/sys/fs/inotify/max_user_watches")
	if !ok1 || !ok2 {
		return doctorCheck{Name: c.Name, Status: checkWarn, Detail: "cannot read fs.inotify limits", Fix: "file watches in sandboxes may fail without inotify"}
	}
	c.Detail = fmt.Sprintf("max_user_instances=%d max_user_watches=%d", instances, watches)
	if instances < 1024 || watches < 65536 {
		c.Status = checkWarn
		c.Fix = "sandboxes' file watches and language servers share these per user: sysctl -w fs.inotify.max_user_instances=8192 fs.inotify.max_user_watches=524288"
	}
	return c
}

// diskSpace checks the free space where the local server keeps its state
// against the default watermark.
func (h doctorHost) diskSpace() doctorCheck {
	c := doctorCheck{Name: "disk space", Status: checkOK}
	home, _, err := resolveHome()
	if err != nil {
		return doctorCheck{Name: c.Name, Status: checkWarn, Detail: err.Error()}
	}
	dir := home
	for !exists(dir) && filepath.Dir(dir) != dir {
		dir = filepath.Dir(dir) // the filesystem it will be made on
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return doctorCheck{Name: c.Name, Status: checkWarn, Detail: fmt.Sprintf("statfs %s: %v", dir, err)}
	}
	free := int64(st.Bavail) * int64(st.Bsize) // Bsize is uint32 on darwin
	c.Detail = fmt.Sprintf("%s free on the filesystem of %s; creates and uploads are refused below %s (--min-free-disk-mib)",
		humanBytes(free), home, humanBytes(defaultWatermark))
	if free < defaultWatermark {
		c.Status = checkWarn
		c.Fix = "free space on that filesystem, or move BOXKITE_HOME to one with room: sandbox disks are sparse and take the host's space as they fill"
	}
	return c
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
