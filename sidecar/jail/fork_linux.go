package jail

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/sidecar/internal/forkhook"
)

// A jail's clone of our own (issue 27, items 1a and 3). Go's forkExec
// has no hook between its clone and its execve, and a new user namespace
// resets the bounding set to full, so the jail's init had to drop 34
// capabilities from it itself, each with an all-thread call that stops
// the world and signals every thread of its Go runtime (~2-3 ms of a
// jail's start; bench/issue27/session12-cold12.md). forkJail is
// syscall.forkExec for what a jail's SysProcAttr asks (sysProcAttr: the
// namespaces, Setsid, the id maps and a Credential with no groups, and
// CLONE_PARENT for a Spawner's) plus one step: after the id maps are
// written and the ids set, the child keeps its permitted capabilities
// across the execve through its inheritable set and drops from its
// bounding set all but the ones the sidecar keeps, and sets
// no_new_privs, with plain prctls on its one thread. The execve, as the namespace's root, computes the
// permitted set as bounding | inheritable: init starts with the same
// capabilities as before (all, in its namespace: Setup needs them) and
// with its final bounding set and no_new_privs, which every thread its
// runtime starts inherits. The lockdown then clears the inheritable set
// with the others (dropCaps) and only checks the bounding set
// (checkBoundingSet) and no_new_privs (checkNoNewPrivs).
//
// The rest is syscall.forkExec's, step for step (go1.26
// syscall/exec_linux.go): the fork lock held from the pipes to the id
// maps, runtime_BeforeFork, a clone without CLONE_VM (the child waits for
// the parent to write its id maps, so it cannot be a vfork), the child's
// frame never returning and making raw system calls only, the map pipe's
// handshake, setsid, the signal handlers reset (runtime_AfterForkInChild),
// setgroups/setgid/setuid, chdir, the descriptors shuffled into place, and
// a failure reported as its errno on a close-on-exec pipe, after which the
// parent reaps the child (a Spawner's, CLONE_PARENT, is the caller's child:
// it stays a zombie, as with syscall.ForkExec; see Spawner).

// jailFork is what the child needs, made before the fork: the child may
// not allocate.
type jailFork struct {
	flags     uintptr
	path, dir *byte
	// execFD: path is /proc/self/fd/N, the child's N after the shuffle,
	// executed with execveat: a skeleton's proc has no self (see
	// skeleton_linux.go). -1 for any other path.
	execFD     int
	empty      [1]byte // execveat's empty path
	argv, envv []*byte // nil-terminated
	fds        []int   // the child's 0, 1, 2, ...; moved in place by the child
	nextFD     int     // above every fd in fds
	errPipe    int     // the status pipe's write end
	mapPipe    [2]int
	setsid     bool
	cred       bool
	setgroups  bool
	uid, gid   uintptr
	drops      []uintptr // capabilities to drop from the bounding set
	capHdr     unix.CapUserHeader
	capData    [2]unix.CapUserData
	// The cgroup (cgroup_place_linux.go): clone3 into cgroup when
	// clone3 is set, then "0" to each of place.
	place  []int
	zero   [1]byte
	clone3 bool
	cargs  cloneArgs
	status childStatus
	// hostProc: the host's /proc, for the parent's writes of the id maps
	// (openProc); nil in all but the spawner's helper.
	hostProc *os.File
	// cgroupNS: unshare a cgroup namespace after the cgroup's steps
	// (forkOptions.cgroupNS); flags then lack CLONE_NEWCGROUP.
	cgroupNS bool
}

// cloneArgs is the kernel's struct clone_args up to its cgroup field
// (CLONE_ARGS_SIZE_VER2, Linux 5.7), as syscall's.
type cloneArgs struct {
	flags      uint64
	pidFD      uint64
	childTID   uint64
	parentTID  uint64
	exitSignal uint64
	stack      uint64
	stackSize  uint64
	tls        uint64
	setTID     uint64
	setTIDSize uint64
	cgroup     uint64
}

// clone3Args is clone3's struct for clone's flags (the exit signal in
// their low byte) into the cgroup2 directory cgroupFD. clone3 takes the
// exit signal apart from the flags, and refuses one with CLONE_PARENT
// (EINVAL: clone3_args_valid), where clone ignores it: a child of our
// parent gets the exit signal our thread group leader has
// (copy_process), so it is 0 then, the same child (a Spawner's jail).
func clone3Args(flags uintptr, cgroupFD int) cloneArgs {
	args := cloneArgs{flags: uint64(flags&^0xff) | unix.CLONE_INTO_CGROUP, exitSignal: uint64(flags & 0xff), cgroup: uint64(cgroupFD)}
	if flags&unix.CLONE_PARENT != 0 {
		args.exitSignal = 0
	}
	return args
}

// cloneArgsSize is clone3's size argument; a test makes it one the
// kernel refuses (E2BIG), as a kernel without CLONE_INTO_CGROUP would.
var cloneArgsSize = unsafe.Sizeof(cloneArgs{})

// childStatus is what a failed child writes to the status pipe: its
// errno and the step that failed (one write, atomic below PIPE_BUF).
type childStatus struct {
	errno syscall.Errno
	step  uintptr
}

// The child's steps a failure names.
const (
	stepStart    = iota // anything but the ones below
	stepCgroup          // a move into its cgroup (cgroupPlace.write)
	stepCgroupNS        // its unshare of a cgroup namespace (jailFork.cgroupNS)
)

// forkOptions are forkJail's arguments.
type forkOptions struct {
	path      string // the binary, /proc/self/fd/N for files[N] (jailFork.execFD)
	argv, env []string
	dir       string
	files     []int                // the child's descriptors 0, 1, 2, ...
	attr      *syscall.SysProcAttr // sysProcAttr's, for a jail that is not a build
	keep      []int                // the bounding set the child leaves (SidecarCaps)
	place     *cgroupPlace         // the cgroup it starts in, or nil
	hostProc  *os.File             // the host's /proc for the id maps, or nil (openProc)
	// cgroupNS: the child makes the cgroup namespace attr asks for
	// (CLONE_NEWCGROUP) itself, once in all of its cgroups, so that it is
	// rooted there (Launch.CgroupNS): the clone's is rooted at the
	// caller's cgroups but for the cgroup2 one clone3 places it in. For
	// a jail no one moves after its clone (placesItself).
	cgroupNS bool
}

// forkJail starts o.path as a jail's init (see above) with o.attr, and
// o.files as its descriptors 0, 1, 2, .... o.place, when not nil, is the
// cgroup the child starts in (openCgroupPlace); forkJail may add to it (a
// fallback's descriptor), and the caller closes it. It returns the
// child's pid. Call it from a locked thread when the thread's ids matter
// (asOwner): the clone and the id maps are made by the calling thread.
func forkJail(o forkOptions) (int, error) {
	a, err := newJailFork(o)
	if err != nil {
		return 0, err
	}
	a.zero[0] = '0'
	path, attr, place := o.path, o.attr, o.place
	if place != nil {
		a.place = place.write
		if place.dir >= 0 {
			a.clone3 = true
			a.cargs = clone3Args(a.flags, place.dir)
		}
	}
	uidMap, gidMap := formatIDMap(attr.UidMappings), formatIDMap(attr.GidMappings)
	setgroups := "deny"
	if attr.GidMappingsEnableSetgroups {
		setgroups = "allow"
	}

	var status [2]int
	syscall.ForkLock.Lock()
	if err := unix.Pipe2(status[:], unix.O_CLOEXEC); err != nil {
		syscall.ForkLock.Unlock()
		return 0, fmt.Errorf("fork jail: %w", err)
	}
	if err := unix.Pipe2(a.mapPipe[:], unix.O_CLOEXEC); err != nil {
		syscall.ForkLock.Unlock()
		closeFDs(status[:])
		return 0, fmt.Errorf("fork jail: %w", err)
	}
	a.errPipe = status[1]
	pid, errno := forkJailChild(a)
	forkhook.AfterFork()
	if errno != 0 && a.clone3 && (clone3Refused(errno, a.cargs.cgroup) || errors.Is(errno, unix.EINVAL)) {
		// Refused: once, later jails open cgroup.procs ahead
		// (openCgroupPlace). Another EINVAL is this clone's: it is tried
		// again without clone3, and the next jail tries clone3 again.
		if clone3Refused(errno, a.cargs.cgroup) {
			noClone3.Store(true)
		}
		if err := place.procsFallback(); err != nil {
			syscall.ForkLock.Unlock()
			closeFDs(status[:])
			closeFDs(a.mapPipe[:])
			return 0, err
		}
		a.place, a.clone3 = place.write, false
		pid, errno = forkJailChild(a)
		forkhook.AfterFork()
	}
	if errno != 0 {
		syscall.ForkLock.Unlock()
		closeFDs(status[:])
		closeFDs(a.mapPipe[:])
		if a.clone3 {
			return 0, fmt.Errorf("place jail in cgroup: clone3: %w", errno)
		}
		return 0, &pathError{path, errno}
	}
	// The child waits for its id maps (as syscall.forkExec's), then for
	// their outcome on the map pipe.
	_ = unix.Close(a.mapPipe[0])
	var mapErr syscall.Errno
	if err := writeIDMaps(a.hostProc, int(pid), uidMap, setgroups, gidMap); err != nil {
		if !errors.As(err, &mapErr) {
			mapErr = unix.EINVAL
		}
	}
	_, _ = unix.Write(a.mapPipe[1], unsafe.Slice((*byte)(unsafe.Pointer(&mapErr)), unsafe.Sizeof(mapErr)))
	_ = unix.Close(a.mapPipe[1])
	syscall.ForkLock.Unlock()

	_ = unix.Close(status[1])
	var child childStatus
	var n int
	for {
		n, err = unix.Read(status[0], unsafe.Slice((*byte)(unsafe.Pointer(&child)), unsafe.Sizeof(child)))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	_ = unix.Close(status[0])
	runtime.KeepAlive(a)
	if err == nil && n == 0 {
		return int(pid), nil // the status pipe closed by the execve
	}
	switch {
	case n == int(unsafe.Sizeof(child)):
		err = child.errno
	case err == nil:
		err = unix.EPIPE
	}
	// The child failed and exits: reap it (ECHILD for CLONE_PARENT's).
	var ws unix.WaitStatus
	for {
		if _, werr := unix.Wait4(int(pid), &ws, 0, nil); !errors.Is(werr, unix.EINTR) {
			break
		}
	}
	if n == int(unsafe.Sizeof(child)) {
		switch child.step {
		case stepCgroup:
			return 0, fmt.Errorf("place jail in cgroup: %w", err)
		case stepCgroupNS:
			return 0, fmt.Errorf("enter cgroup namespace: %w", err)
		}
	}
	return 0, &pathError{path, err}
}

// pathError is os.PathError's message for a failed start, as
// syscall.ForkExec's callers see it.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return "fork/exec " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// newJailFork prepares the child's arguments, and refuses an attr that
// asks for more than forkJail does.
func newJailFork(o forkOptions) (*jailFork, error) {
	path, argv, env, dir, files, attr := o.path, o.argv, o.env, o.dir, o.files, o.attr
	if attr == nil || attr.Cloneflags&unix.CLONE_NEWUSER == 0 || len(attr.UidMappings) == 0 || len(attr.GidMappings) == 0 {
		return nil, errors.New("fork jail: not a jail's user namespace")
	}
	rest := *attr
	rest.Cloneflags, rest.Setsid, rest.Credential = 0, false, nil
	rest.UidMappings, rest.GidMappings, rest.GidMappingsEnableSetgroups = nil, nil, false
	if !sameAttr(rest, syscall.SysProcAttr{}) {
		return nil, errors.New("fork jail: SysProcAttr asks for more than a jail's clone")
	}
	if c := attr.Credential; c != nil && (len(c.Groups) > 0 || c.NoSetGroups) {
		return nil, errors.New("fork jail: supplementary groups are not supported")
	}
	if len(files) < 3 {
		return nil, errors.New("fork jail: fewer than three descriptors")
	}
	a := &jailFork{
		flags:    attr.Cloneflags | uintptr(unix.SIGCHLD),
		setsid:   attr.Setsid,
		fds:      append([]int(nil), files...),
		capHdr:   unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3},
		hostProc: o.hostProc,
	}
	a.execFD = -1
	if o.cgroupNS && attr.Cloneflags&unix.CLONE_NEWCGROUP != 0 {
		a.flags &^= unix.CLONE_NEWCGROUP
		a.cgroupNS = true
	}
	if fd, ok := procFDPath(path); ok && fd < len(files) {
		a.execFD = fd
	}
	var err error
	if a.path, err = syscall.BytePtrFromString(path); err != nil {
		return nil, err
	}
	if a.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return nil, err
	}
	if a.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return nil, err
	}
	if dir != "" {
		if a.dir, err = syscall.BytePtrFromString(dir); err != nil {
			return nil, err
		}
	}
	if c := attr.Credential; c != nil {
		// As syscall's child: setgroups(0) unless the namespace denies it.
		a.cred, a.setgroups, a.uid, a.gid = true, attr.GidMappingsEnableSetgroups, uintptr(c.Uid), uintptr(c.Gid)
	}
	a.nextFD = len(files)
	for _, fd := range files {
		if fd < 0 {
			return nil, fmt.Errorf("fork jail: descriptor %d", fd)
		}
		a.nextFD = max(a.nextFD, fd)
	}
	a.nextFD++
	if a.drops, err = boundingDrops(o.keep); err != nil {
		return nil, err
	}
	return a, nil
}

// sameAttr compares two SysProcAttrs field by field, slices by length.
func sameAttr(a, b syscall.SysProcAttr) bool {
	return a.Chroot == b.Chroot && a.Ptrace == b.Ptrace && a.Setsid == b.Setsid &&
		a.Setpgid == b.Setpgid && a.Pgid == b.Pgid && a.Credential == b.Credential &&
		a.Setctty == b.Setctty && a.Noctty == b.Noctty && a.Ctty == b.Ctty &&
		a.Foreground == b.Foreground && a.Pdeathsig == b.Pdeathsig && a.Cloneflags == b.Cloneflags &&
		a.Unshareflags == b.Unshareflags && len(a.UidMappings) == len(b.UidMappings) &&
		len(a.GidMappings) == len(b.GidMappings) && a.GidMappingsEnableSetgroups == b.GidMappingsEnableSetgroups &&
		len(a.AmbientCaps) == len(b.AmbientCaps) && a.UseCgroupFD == b.UseCgroupFD && a.PidFD == b.PidFD
}

// boundingDrops lists the capabilities the kernel knows that are not in
// keep. A capability past the kernel's last fails PR_CAPBSET_READ with
// EINVAL whatever this thread's own bounding set holds.
func boundingDrops(keep []int) ([]uintptr, error) {
	mask := capMask(keep)
	var drops []uintptr
	for c := range 64 {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); errors.Is(err, unix.EINVAL) {
			return drops, nil
		} else if err != nil {
			return nil, fmt.Errorf("read bounding set: %w", err)
		}
		if mask[c/32]&(1<<(c%32)) == 0 {
			drops = append(drops, uintptr(c))
		}
	}
	return drops, nil
}

// capMask is caps as the two words of a capability set.
func capMask(caps []int) [2]uint32 {
	var mask [2]uint32
	for _, c := range caps {
		mask[c/32] |= 1 << (c % 32)
	}
	return mask
}

func formatIDMap(m []syscall.SysProcIDMap) []byte {
	var b []byte
	for _, e := range m {
		b = append(b, strconv.Itoa(e.ContainerID)+" "+strconv.Itoa(e.HostID)+" "+strconv.Itoa(e.Size)+"\n"...)
	}
	return b
}

// writeIDMaps writes the child's uid map, setgroups and gid map, in
// syscall's order, each with one write as the kernel requires, below
// hostProc (openProc).
func writeIDMaps(hostProc *os.File, pid int, uidMap []byte, setgroups string, gidMap []byte) error {
	proc := strconv.Itoa(pid) + "/"
	if err := writeProcFile(hostProc, proc+"uid_map", uidMap); err != nil {
		return err
	}
	if err := writeProcFile(hostProc, proc+"setgroups", []byte(setgroups)); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return writeProcFile(hostProc, proc+"gid_map", gidMap)
}

// writeProcFile writes b to name below the host's /proc (openProc).
func writeProcFile(hostProc *os.File, name string, b []byte) error {
	fd, err := openProc(hostProc, name, unix.O_RDWR)
	if err != nil {
		return err
	}
	n, err := unix.Write(fd, b)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil && n != len(b) {
		err = unix.EIO
	}
	return err
}

// forkJailChild clones; in the child it waits for its id maps, sets
// itself up and execs, or writes the errno to the status pipe and exits.
// The parent returns at once (the caller calls forkhook.AfterFork).
//
// After forkhook.BeforeFork: no allocation, no call but raw syscalls and
// the runtime's nosplit hooks.
//
//go:noinline
//go:norace
//go:nocheckptr
func forkJailChild(a *jailFork) (pid uintptr, err syscall.Errno) {
	var (
		e    syscall.Errno
		mapE syscall.Errno
		n    uintptr
		i    int
		fd   uintptr
		pipe int
		next int
	)
	forkhook.BeforeFork()
	if a.clone3 {
		pid, _, e = syscall.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&a.cargs)), cloneArgsSize, 0)
	} else {
		pid, _, e = syscall.RawSyscall6(unix.SYS_CLONE, a.flags, 0, 0, 0, 0, 0)
	}
	if e != 0 || pid != 0 {
		return pid, e
	}
	// The child. Into its cgroups first, one thread ("0" to tasks: see
	// cgroup_place_linux.go), so all it does from here is theirs.
	pipe = a.errPipe
	a.status.step = stepCgroup
	for i = 0; i < len(a.place); i++ {
		if _, _, e = syscall.RawSyscall(unix.SYS_WRITE, uintptr(a.place[i]), uintptr(unsafe.Pointer(&a.zero[0])), 1); e != 0 {
			goto fail
		}
	}
	// Then, there, its cgroup namespace: rooted at its cgroup, whose
	// ancestors it hides, and inherited by every thread its init's
	// runtime starts (a clone's CLONE_NEWCGROUP roots it at the caller's
	// cgroup, and init made another on one thread, then moved the others
	// with an all-thread setns: issue 27).
	if a.cgroupNS {
		a.status.step = stepCgroupNS
		if _, _, e = syscall.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWCGROUP, 0, 0); e != 0 {
			goto fail
		}
	}
	a.status.step = stepStart
	// Then its id maps: until they are written it is nobody.
	if _, _, e = syscall.RawSyscall(unix.SYS_CLOSE, uintptr(a.mapPipe[1]), 0, 0); e != 0 {
		goto fail
	}
	if n, _, e = syscall.RawSyscall(unix.SYS_READ, uintptr(a.mapPipe[0]), uintptr(unsafe.Pointer(&mapE)), unsafe.Sizeof(mapE)); e != 0 {
		goto fail
	}
	if n != unsafe.Sizeof(mapE) {
		e = unix.EINVAL
		goto fail
	}
	if mapE != 0 {
		e = mapE
		goto fail
	}
	if a.setsid {
		if _, _, e = syscall.RawSyscall(unix.SYS_SETSID, 0, 0, 0); e != 0 {
			goto fail
		}
	}
	// Default handlers, then the thread's mask from before the fork.
	forkhook.AfterForkInChild()
	if a.cred {
		if a.setgroups {
			if _, _, e = syscall.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
				goto fail
			}
		}
		if _, _, e = syscall.RawSyscall(unix.SYS_SETGID, a.gid, 0, 0); e != 0 {
			goto fail
		}
		if _, _, e = syscall.RawSyscall(unix.SYS_SETUID, a.uid, 0, 0); e != 0 {
			goto fail
		}
	}
	// The capabilities the execve keeps: the permitted ones through the
	// inheritable set (the namespace's root gets bounding | inheritable),
	// set while the bounding set still holds them all.
	if _, _, e = syscall.RawSyscall(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&a.capHdr)), uintptr(unsafe.Pointer(&a.capData[0])), 0); e != 0 {
		goto fail
	}
	for i = 0; i < len(a.capData); i++ {
		a.capData[i].Inheritable = a.capData[i].Permitted
	}
	if _, _, e = syscall.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&a.capHdr)), uintptr(unsafe.Pointer(&a.capData[0])), 0); e != 0 {
		goto fail
	}
	for i = 0; i < len(a.drops); i++ {
		if _, _, e = syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, a.drops[i], 0, 0, 0, 0); e != 0 {
			goto fail
		}
	}
	// no_new_privs too, per thread and inherited like the bounding set:
	// the execve keeps the permitted set (it gains nothing over it).
	if _, _, e = syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		goto fail
	}
	if a.dir != nil {
		if _, _, e = syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(a.dir)), 0, 0); e != 0 {
			goto fail
		}
	}
	// As syscall's child: the status pipe and any descriptor a lower dup
	// would overwrite move above them all, then each goes in its place.
	next = a.nextFD
	if pipe < next {
		if _, _, e = syscall.RawSyscall(unix.SYS_DUP3, uintptr(pipe), uintptr(next), unix.O_CLOEXEC); e != 0 {
			goto fail
		}
		pipe = next
		next++
	}
	for i = 0; i < len(a.fds); i++ {
		if a.fds[i] < i {
			if next == pipe {
				next++
			}
			if fd, _, e = syscall.RawSyscall(unix.SYS_DUP3, uintptr(a.fds[i]), uintptr(next), unix.O_CLOEXEC); e != 0 {
				goto fail
			}
			a.fds[i] = int(fd)
			next++
		}
	}
	for i = 0; i < len(a.fds); i++ {
		if a.fds[i] == i {
			// dup3 onto itself fails: only clear close-on-exec.
			if _, _, e = syscall.RawSyscall(unix.SYS_FCNTL, uintptr(i), unix.F_SETFD, 0); e != 0 {
				goto fail
			}
			continue
		}
		if _, _, e = syscall.RawSyscall(unix.SYS_DUP3, uintptr(a.fds[i]), uintptr(i), 0); e != 0 {
			goto fail
		}
	}
	if a.execFD >= 0 {
		_, _, e = syscall.RawSyscall6(unix.SYS_EXECVEAT, uintptr(a.execFD), uintptr(unsafe.Pointer(&a.empty[0])),
			uintptr(unsafe.Pointer(&a.argv[0])), uintptr(unsafe.Pointer(&a.envv[0])), unix.AT_EMPTY_PATH, 0)
	} else {
		_, _, e = syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(a.path)),
			uintptr(unsafe.Pointer(&a.argv[0])), uintptr(unsafe.Pointer(&a.envv[0])))
	}
fail:
	a.status.errno = e
	_, _, _ = syscall.RawSyscall(unix.SYS_WRITE, uintptr(pipe), uintptr(unsafe.Pointer(&a.status)), unsafe.Sizeof(a.status))
	for {
		_, _, _ = syscall.RawSyscall(unix.SYS_EXIT, 253, 0, 0)
	}
}
