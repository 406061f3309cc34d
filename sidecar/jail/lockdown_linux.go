package jail

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// SidecarCaps are the capabilities the sidecar keeps, and only inside the
// jail's user namespace, where they reach nothing but ids mapped into it:
// switching to the sandbox user, and managing that user's files and
// processes on the agent's behalf. Everything else is dropped for good.
// A nested jail (Spec.Nested) also keeps CAP_SETFCAP: since Linux 5.12 only
// a holder of it may map the jail's root (the sidecar's own uid) into the
// per-command user namespace.
func SidecarCaps(nested bool) []int {
	caps := []int{
		unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
		unix.CAP_KILL, unix.CAP_SETUID, unix.CAP_SETGID,
	}
	if nested {
		caps = append(caps, unix.CAP_SETFCAP)
	}
	return caps
}

// BuildCaps are the capabilities a build's steps (Spec.Build) keep, only
// inside the jail's user namespace too: SidecarCaps, plus CAP_FSETID and
// CAP_SETFCAP, which dpkg, apt, pip and npm need to install files owned
// by root and other system users with their modes and file capabilities.
func BuildCaps() []int {
	return append(SidecarCaps(false), unix.CAP_FSETID, unix.CAP_SETFCAP)
}

// Rlimits applied by Lockdown besides Spec.MaxProcs and Spec.MaxFileSize.
const (
	maxOpenFiles = 4096
	maxCoreSize  = 0
)

// Lockdown drops the privileges init gained with its namespaces: lowered
// rlimits (Spec.MaxProcs, Spec.MaxFileSize, open files, no core dumps),
// no_new_privs, a bounding set of SidecarCaps (BuildCaps for a build), no
// ambient or inheritable capabilities, the same as the permitted and
// effective sets, and last a seccomp filter (see seccompPolicy) that every
// later process inherits.
// Call it after Setup.
//
// no_new_privs and the capability sets belong to a thread, not a process:
// call Lockdown with the OS thread locked (runtime.LockOSThread) and start
// the sidecar from that same thread, which then inherits exactly this state.
// The process also becomes non-dumpable, so an agent sharing its host uid
// (a single-id jail) cannot read its memory or write its binary via /proc.
//
// Cgroup limits are not here: the jail's root cannot write the host's
// cgroup files, so the driver places init in its cgroups before Start hands
// over the launch document.
func Lockdown(spec Spec) error {
	s := spec.withDefaults()
	limits := map[int]uint64{
		unix.RLIMIT_NOFILE: maxOpenFiles,
		unix.RLIMIT_CORE:   maxCoreSize,
		unix.RLIMIT_NPROC:  uint64(s.MaxProcs),
	}
	if s.MaxFileSize > 0 {
		limits[unix.RLIMIT_FSIZE] = uint64(s.MaxFileSize)
	}
	for resource, limit := range limits {
		if err := lowerRlimit(resource, limit); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("clear dumpable: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	caps := SidecarCaps(s.Nested())
	if s.Build != nil {
		caps = BuildCaps()
	}
	if err := dropCaps(caps); err != nil {
		return err
	}
	return installSeccomp(s.Nested())
}

// dropCaps keeps only keep in the bounding, permitted and effective sets
// and clears the ambient and inheritable ones.
func dropCaps(keep []int) error {
	var mask [2]uint32
	for _, c := range keep {
		mask[c/32] |= 1 << (c % 32)
	}
	for c := range 64 {
		if mask[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for i := range data {
		data[i].Effective, data[i].Permitted = mask[i], mask[i]
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("set capabilities: %w", err)
	}
	return nil
}

func lowerRlimit(resource int, limit uint64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(resource, &cur); err != nil {
		return fmt.Errorf("get rlimit %d: %w", resource, err)
	}
	next := unix.Rlimit{Cur: min(cur.Cur, limit), Max: min(cur.Max, limit)}
	if next == cur {
		return nil
	}
	if err := unix.Setrlimit(resource, &next); err != nil {
		return fmt.Errorf("lower rlimit %d: %w", resource, err)
	}
	return nil
}
