package jail

import "slices"

// Own is the calling process's own cgroup as a Cgroup whose Usage reads
// what it and everything it started hold and used (a pod's sidecar: its
// container's): the cgroup2 directory, or on v1 those of the memory and
// pids hierarchies and of cpuacct, which has the CPU time (it may be
// mounted apart from cpu). Not for Remove or Add: they are not ours.
func (c *Cgroups) Own() Cgroup {
	if c.v2 != "" {
		return Cgroup{Dirs: []string{c.v2}}
	}
	var dirs []string
	for _, d := range []string{c.v1["memory"], c.v1["pids"], c.acct} {
		if d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return Cgroup{Dirs: dirs}
}
