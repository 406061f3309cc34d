package kube

// SidecarDials is how many connections the sidecars Stats keeps were
// opened with.
func SidecarDials(d *Driver) uint64 { return d.kept.dials.Load() }

// KeptSidecars is how many sandboxes' sidecars Stats keeps.
func KeptSidecars(d *Driver) int {
	d.kept.mu.Lock()
	defer d.kept.mu.Unlock()
	return len(d.kept.m)
}
