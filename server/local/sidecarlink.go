//go:build linux

package local

import "debug/elf"

// checkSidecarStatic warns when the sidecar binary is dynamically linked
// (built with cgo). A jail's init starts in a copy of the host's mount
// namespace, and the kernel maps a dynamic binary's ELF interpreter (and
// the interpreter the C library) through that copy before the jail
// pivots out of it; those mappings keep the whole copy alive for as long
// as the jail runs, and with it every filesystem the host had mounted
// when the jail started: a deleted sandbox's disk and loop device, an
// unmounted volume, stay until every jail started meanwhile has ended
// (TestJailsDoNotPinHostMounts). Release builds are static.
func (d *Driver) checkSidecarStatic() {
	f, err := elf.Open(d.sidecar)
	if err != nil {
		return // not ELF, or unreadable: starting it will say
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			d.log.Warn("the sidecar is dynamically linked: each jail keeps the host's mounts of when it started (deleted sandboxes' disks, unmounted volumes) alive until it ends; build it with CGO_ENABLED=0, as releases are",
				"sidecar", d.sidecar)
			return
		}
	}
}
