package jail

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOwnUsage: the calling process's own cgroup (a pod's sidecar's, its
// container's) reads as a sandbox's does: v2's memory, tasks and CPU
// time in one directory; on v1, memory and tasks from their hierarchies
// and CPU time from cpuacct's, mounted apart from cpu's (hybrid) or with
// it (combined).
func TestOwnUsage(t *testing.T) {
	v1 := func(memory, pids, cpuacct string) map[string]string {
		m := map[string]string{memory + "/memory.usage_in_bytes": "300\n", memory + "/memory.stat": "cache 100\nrss 200\n", cpuacct + "/cpuacct.usage": "7000000\n"}
		if pids != "" {
			m[pids+"/pids.current"] = "4\n"
		}
		return m
	}
	withFiles := func(h cgroupHost, files map[string]string) cgroupHost {
		all := map[string]string{}
		for k, v := range h.files {
			all[k] = v
		}
		for k, v := range files {
			all[k] = v
		}
		h.files = all
		return h
	}
	unifiedDir := "sys/fs/cgroup/system.slice/boxkite.service"
	for _, tt := range []struct {
		name string
		host cgroupHost
		want Usage
	}{
		{"unified", withFiles(unified, map[string]string{
			unifiedDir + "/memory.current": "300\n", unifiedDir + "/memory.stat": "anon 200\nfile 100\n",
			unifiedDir + "/cpu.stat": "usage_usec 7000\nuser_usec 5000\n", unifiedDir + "/pids.current": "4\n",
		}), Usage{Memory: 300, MemoryAnon: 200, Pids: 4, CPUMicros: 7000}},
		{
			"hybrid", withFiles(hybrid, v1("sys/fs/cgroup/memory/process_api/f0c1", "sys/fs/cgroup/pids", "sys/fs/cgroup/cpuacct")),
			Usage{Memory: 300, MemoryAnon: 200, Pids: 4, CPUMicros: 7000},
		},
		{
			"combined", withFiles(combined, v1("sys/fs/cgroup/memory/x", "", "sys/fs/cgroup/cpu,cpuacct/docker/abc")),
			Usage{Memory: 300, MemoryAnon: 200, CPUMicros: 7000},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DetectCgroups(tt.host.build(t))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Own().Usage()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}
