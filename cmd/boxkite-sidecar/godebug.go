// The jail's init starts in a copy of the host's mount namespace and
// leaves it when it pivots into its own root. The runtime's
// container-aware GOMAXPROCS would open the cgroup CPU limit file through
// that copy before main runs and keep it open for good, which keeps the
// whole copy alive, and with it every filesystem the host had mounted
// (other sandboxes' disks, volumes) long after the host unmounts them
// (server/local TestJailsDoNotPinHostMounts). Off, the runtime reads the
// file once and closes it.

//go:debug containermaxprocs=0

package main
