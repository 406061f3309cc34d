package cli

import (
	"slices"
	"strings"

	"github.com/boxkite/boxkite/internal/criu"
)

// pause says which pause modes the local driver can offer here (issue
// 22): freeze needs root and a freezer (cgroup v2, or the v1 freezer
// hierarchy); filesystem needs disk-backed storage; checkpoint, which keeps memory on
// disk, needs `criu check` to pass. A missing freeze is a warning; a
// missing checkpoint is only said, since freeze keeps memory too.
func (h doctorHost) pause() doctorCheck {
	c := doctorCheck{Name: "pause", Status: checkOK}
	freezer := ""
	for _, m := range h.cgroupMounts() {
		if m.v2 {
			freezer = "cgroup v2 freezer"
			break
		}
	}
	if freezer == "" && h.v1Freezer() {
		freezer = "v1 freezer"
	}
	var freeze string
	switch {
	case freezer == "":
		c.Status, freeze = checkWarn, "freeze: no (no freezer: neither cgroup2 nor the v1 freezer hierarchy is mounted)"
		c.Fix = "mount cgroup2, or the v1 freezer controller, for pause mode freeze"
	case h.euid != 0:
		c.Status, freeze = checkWarn, "freeze: no (not root: sandboxes get no cgroups)"
		c.Fix = "run 'boxkite up' as root for pause mode freeze"
	default:
		freeze = "freeze: yes (" + freezer + ")"
	}
	filesystem := "filesystem: yes"
	if h.storage().Status != checkOK {
		filesystem = "filesystem: no (the workspace is a tmpfs in memory)"
	}
	c.Detail = freeze + "; " + filesystem + "; checkpoint (memory on disk): no, " + h.criu()
	return c
}

// v1Freezer reports whether mountinfo has the v1 freezer hierarchy.
func (h doctorHost) v1Freezer() bool {
	s, _ := h.read("proc/self/mountinfo")
	for _, line := range strings.Split(s, "\n") {
		_, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(post)
		if ok && len(f) >= 3 && f[0] == "cgroup" && slices.Contains(strings.Split(f[2], ","), "freezer") {
			return true
		}
	}
	return false
}

// criu says why CRIU cannot checkpoint here: not installed, or `criu
// check` fails (run only on the real host, not under --root); the local
// driver does not checkpoint even where it passes.
func (h doctorHost) criu() string {
	if h.root != "/" {
		if criu.Find(h.root) != "" {
			return "criu is installed (not run under --root)"
		}
		return "criu is not installed"
	}
	if why := criu.Problem(); why != "" {
		return why
	}
	return "criu check passes, but the local driver does not checkpoint yet"
}
