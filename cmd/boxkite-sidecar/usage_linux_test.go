package main

import (
	"os"
	"testing"
)

// TestCgroupUsageReal: the sidecar reads its own cgroup on this host (as
// a pod's sidecar reads its container's): memory held, and CPU time that
// grows as it works.
func TestCgroupUsageReal(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the CI host's cgroups")
	}
	read := cgroupUsage()
	first, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if first.MemoryBytes <= 0 || first.CPUMicros <= 0 {
		t.Fatalf("usage %+v, want memory and CPU time", first)
	}
	for x := 0; ; x++ { // spin until the CPU time moves on
		u, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if u.CPUMicros > first.CPUMicros {
			break
		}
		_ = x * x
	}
}
