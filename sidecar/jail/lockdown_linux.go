package jail

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

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
// effective sets, and last a seccomp filter (see internal/seccomppolicy) that every
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
func Lockdown(spec Spec) error { return lockdown(spec, threadCalls{}) }

// LockdownProcess is Lockdown for every thread of the process at once, so
// the process itself can go on to serve (one process per jail, no re-exec):
// no_new_privs and the capability sets are changed on each thread, and
// threads made later inherit them from one that was. The bounding set
// and no_new_privs it only checks (checkBoundingSet, checkNoNewPrivs): a
// jail started by Start or a Spawner (forkJail) starts with both final,
// and one that does not is refused (ErrBoundingSet, ErrNoNewPrivs) rather
// than given 35 more all-thread calls. It needs the runtime
// to reach every thread (syscall.AllThreadsSyscall), which a binary linked
// with cgo cannot: in a cgo binary its first all-thread call fails with
// ErrThreadsUnreachable, after the rlimits and the dumpable flag, which
// belong to the process (and Lockdown sets alike), were set. That call is
// the probe of a jail born in its cgroup namespace (Launch.CgroupNS); the
// others' is ShareCgroupNamespace, which comes first (each all-thread
// call stops the world and signals every thread: issue 27).
func LockdownProcess(spec Spec) error {
	return lockdown(spec, allThreads{syscall.AllThreadsSyscall})
}

// ErrThreadsUnreachable is ShareCgroupNamespace's and LockdownProcess's
// refusal in a cgo binary.
var ErrThreadsUnreachable = errors.New("lock down every thread: the binary is linked with cgo (build it with CGO_ENABLED=0)")

// ShareCgroupNamespace moves every thread of the process into the calling
// thread's cgroup namespace. Setup enters a fresh one on the calling thread
// only (namespaces belong to threads) unless the jail was born in its own
// (Launch.CgroupNS); a process that serves from all of
// its threads must have them all there, or commands forked from another
// thread would see the host's cgroup paths. It is the process's first
// all-thread call, and so its probe: in a binary linked with cgo it
// changes nothing and returns ErrThreadsUnreachable.
func ShareCgroupNamespace() error {
	return shareCgroupNamespace(syscall.AllThreadsSyscall)
}

// allThreadsSyscall is syscall.AllThreadsSyscall's signature.
type allThreadsSyscall func(trap, a1, a2, a3 uintptr) (r1, r2 uintptr, err syscall.Errno)

func shareCgroupNamespace(call allThreadsSyscall) error {
	fd, err := unix.Open("/proc/thread-self/ns/cgroup", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("share cgroup namespace: %w", err)
	}
	defer unix.Close(fd)
	if _, _, errno := call(unix.SYS_SETNS, uintptr(fd), unix.CLONE_NEWCGROUP, 0); errno != 0 {
		return fmt.Errorf("share cgroup namespace: %w", allThreadsErr(errno))
	}
	return nil
}

// allThreadsErr is an all-thread call's error: ErrThreadsUnreachable
// where the runtime refuses it (cgo), else errno.
func allThreadsErr(errno syscall.Errno) error {
	if errno == unix.ENOTSUP {
		return ErrThreadsUnreachable
	}
	return errno
}

// calls are the per-thread system calls of Lockdown: on the calling thread
// (threadCalls) or on every thread of the process (allThreads).
type calls interface {
	prctl(option, arg2, arg3 uintptr) error
	capset(hdr *unix.CapUserHeader, data *unix.CapUserData) error
	// boundingSet leaves at most keep in the bounding set.
	boundingSet(keep []int) error
	// noNewPrivs leaves no_new_privs set.
	noNewPrivs() error
	// clearAmbient empties the ambient set, or leaves it to the capset.
	clearAmbient() error
}

func (threadCalls) clearAmbient() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	return nil
}

func (threadCalls) noNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

type threadCalls struct{}

// boundingSet drops from this thread's bounding set what keep does not
// hold: a build's init (os/exec's clone) and the cgo fallback's.
func (threadCalls) boundingSet(keep []int) error {
	drops, err := boundingDrops(keep)
	if err != nil {
		return err
	}
	for _, c := range drops {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from bounding set: %w", c, err)
		}
	}
	return nil
}

func (threadCalls) prctl(option, arg2, arg3 uintptr) error {
	return unix.Prctl(int(option), arg2, arg3, 0, 0)
}

func (threadCalls) capset(hdr *unix.CapUserHeader, data *unix.CapUserData) error {
	return unix.Capset(hdr, data)
}

type allThreads struct{ call allThreadsSyscall }

// boundingSet only checks it: the jail's clone (forkJail) dropped the
// rest before init's execve, and every thread inherited the result.
func (allThreads) boundingSet(keep []int) error { return checkBoundingSet(keep) }

// noNewPrivs only checks it, on the main thread (see checkBoundingSet):
// the jail's clone set it before init's execve.
func (allThreads) noNewPrivs() error { return checkNoNewPrivs() }

// clearAmbient makes no call: the all-thread capset that follows
// (dropCaps) empties the ambient set of every thread, as the kernel keeps
// in it only what stays both permitted and inheritable, and the
// inheritable set becomes empty; a jail's clone starts it empty anyway
// (a new user namespace does, and nothing raises it). One all-thread call
// less (issue 27).
func (allThreads) clearAmbient() error { return nil }

// ErrNoNewPrivs is LockdownProcess's refusal to serve from a process
// without no_new_privs: it was not started by forkJail.
var ErrNoNewPrivs = errors.New("no_new_privs is not set (start the jail with jail.Start or a Spawner)")

func checkNoNewPrivs() error {
	on, _, errno := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("read no_new_privs: %w", errno)
	}
	if on != 1 {
		return fmt.Errorf("check no_new_privs: %w", ErrNoNewPrivs)
	}
	return nil
}

// ErrBoundingSet is LockdownProcess's refusal to serve from a process
// whose bounding set holds more than the sidecar keeps: it was not
// started by forkJail (a Spawner or Start), so dropping the rest would
// take an all-thread call per capability.
var ErrBoundingSet = errors.New("the bounding set holds capabilities the sidecar does not keep (start the jail with jail.Start or a Spawner)")

// checkBoundingSet fails with ErrBoundingSet if the calling thread's
// bounding set holds a capability keep does not. Called on the main
// thread (serveAsInit checks it is the leader): the one the execve ran
// on, whose set every other thread was cloned with, and a bounding set
// only ever shrinks, so no thread's holds more.
func checkBoundingSet(keep []int) error {
	mask := capMask(keep)
	for c := range 64 {
		// Raw: ~41 reads that never block, in the jail's start.
		in, _, errno := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0, 0)
		if errno == unix.EINVAL {
			return nil // past the kernel's last capability
		}
		if errno != 0 {
			return fmt.Errorf("read bounding set: %w", errno)
		}
		if in == 1 && mask[c/32]&(1<<(c%32)) == 0 {
			return fmt.Errorf("check bounding set: capability %d: %w", c, ErrBoundingSet)
		}
	}
	return fmt.Errorf("check bounding set: %w", unix.EINVAL) // no kernel has 64
}

func (a allThreads) prctl(option, arg2, arg3 uintptr) error {
	if _, _, errno := a.call(unix.SYS_PRCTL, option, arg2, arg3); errno != 0 {
		return allThreadsErr(errno)
	}
	return nil
}

func (a allThreads) capset(hdr *unix.CapUserHeader, data *unix.CapUserData) error {
	_, _, errno := a.call(unix.SYS_CAPSET, uintptr(unsafe.Pointer(hdr)), uintptr(unsafe.Pointer(data)), 0)
	if errno != 0 {
		return allThreadsErr(errno)
	}
	return nil
}

func lockdown(spec Spec, on calls) error {
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
	if err := on.noNewPrivs(); err != nil {
		return err
	}
	caps := SidecarCaps(s.Nested())
	if s.Build != nil {
		caps = BuildCaps()
	}
	if err := dropCaps(caps, on); err != nil {
		return err
	}
	return installSeccomp(s.Nested())
}

// dropCaps keeps only keep in the bounding, permitted and effective sets
// and clears the ambient and inheritable ones.
func dropCaps(keep []int, on calls) error {
	mask := capMask(keep)
	if err := on.boundingSet(keep); err != nil {
		return err
	}
	if err := on.clearAmbient(); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for i := range data {
		data[i].Effective, data[i].Permitted = mask[i], mask[i]
	}
	if err := on.capset(&hdr, &data[0]); err != nil {
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
