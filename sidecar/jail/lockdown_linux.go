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
// threads made later inherit them from one that was. It needs the runtime
// to reach every thread (syscall.AllThreadsSyscall), which a binary linked
// with cgo cannot: call it once ShareCgroupNamespace has succeeded, which
// proves they are reachable. It does not ask again (each all-thread call
// stops the world and signals every thread: issue 27); in a cgo binary its
// first all-thread call fails with ErrThreadsUnreachable, after the
// rlimits and the dumpable flag, which belong to the process, were set.
func LockdownProcess(spec Spec) error {
	return lockdown(spec, allThreads{syscall.AllThreadsSyscall})
}

// ErrThreadsUnreachable is ShareCgroupNamespace's and LockdownProcess's
// refusal in a cgo binary.
var ErrThreadsUnreachable = errors.New("lock down every thread: the binary is linked with cgo (build it with CGO_ENABLED=0)")

// ShareCgroupNamespace moves every thread of the process into the calling
// thread's cgroup namespace. Setup enters a fresh one on the calling thread
// only (namespaces belong to threads); a process that serves from all of
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
}

type threadCalls struct{}

func (threadCalls) prctl(option, arg2, arg3 uintptr) error {
	return unix.Prctl(int(option), arg2, arg3, 0, 0)
}

func (threadCalls) capset(hdr *unix.CapUserHeader, data *unix.CapUserData) error {
	return unix.Capset(hdr, data)
}

type allThreads struct{ call allThreadsSyscall }

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
	if err := on.prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
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
	var mask [2]uint32
	for _, c := range keep {
		mask[c/32] |= 1 << (c % 32)
	}
	for c := range 64 {
		if mask[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		// Read first, on this thread: past the kernel's last capability
		// it fails, and a failing call must not reach every thread.
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); errors.Is(err, unix.EINVAL) {
			break
		}
		if err := on.prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0); err != nil {
			return fmt.Errorf("drop capability %d from bounding set: %w", c, err)
		}
	}
	if err := on.prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
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
