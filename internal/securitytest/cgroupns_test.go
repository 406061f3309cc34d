package securitytest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestCgroupNamespaceHidesHost: a sandbox's commands and every thread of
// its sidecar share one cgroup namespace, rooted at the sandbox's cgroup
// in every hierarchy: /proc/self/cgroup names "/" alone, never the
// host's path to the sandbox nor any above it. The jail's clone enters
// that namespace once placed, before it runs anything
// (jail.Launch.CgroupNS): on a hybrid host a clone's own CLONE_NEWCGROUP
// would be rooted at the driver's v1 cgroups. The sidecar's threads are
// read from the host: a command may not read the namespaces of the
// sidecar, which is not dumpable.
func TestCgroupNamespaceHidesHost(t *testing.T) {
	x := newSuite(t)
	id := x.sandbox(api.CreateSandboxRequest{})
	res := x.run(id, "cat /proc/self/cgroup; readlink /proc/self/ns/cgroup")
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.ExitCode != 0 || len(lines) < 2 {
		t.Fatalf("cat /proc/self/cgroup: exit %d: %q %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	ns := lines[len(lines)-1]
	for _, line := range lines[:len(lines)-1] {
		if parts := strings.SplitN(line, ":", 3); len(parts) != 3 || parts[2] != "/" {
			t.Errorf("the sandbox's /proc/self/cgroup names %q, want / (its namespace's root) in every hierarchy", line)
		}
	}
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(x.host(id).PID), "task", "*"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the sidecar's threads: %v, %v", tasks, err)
	}
	for _, task := range tasks {
		if got, err := os.Readlink(filepath.Join(task, "ns", "cgroup")); err != nil || got != ns {
			t.Errorf("sidecar thread %s: cgroup namespace %q (%v), want the command's %q", filepath.Base(task), got, err, ns)
		}
	}
}
