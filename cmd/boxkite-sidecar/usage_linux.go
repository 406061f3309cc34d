package main

import (
	"sync"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// cgroupUsage reads the use of the cgroup the sidecar runs in, for GET
// /usage (a pod's sidecar: its container's, the sandbox's), OOM kills
// included. The cgroup is
// found at the first call, not at start, and read at each: an idle
// sidecar does nothing for it.
func cgroupUsage() func() (api.SidecarUsage, error) {
	own := sync.OnceValues(func() (jail.Cgroup, error) {
		c, err := jail.DetectCgroups("/")
		if err != nil {
			return jail.Cgroup{}, err
		}
		return c.Own(), nil
	})
	return func() (api.SidecarUsage, error) {
		cg, err := own()
		if err != nil {
			return api.SidecarUsage{}, err
		}
		u, err := cg.Usage()
		if err != nil {
			return api.SidecarUsage{}, err
		}
		kills, _, err := cg.OOMKills() // none without a memory hierarchy
		if err != nil {
			return api.SidecarUsage{}, err
		}
		return api.SidecarUsage{MemoryBytes: u.Memory, MemoryAnonBytes: u.MemoryAnon, Pids: u.Pids, CPUMicros: u.CPUMicros, OOMKills: kills}, nil
	}
}
