//go:build linux && (amd64 || arm64)

package sidecar

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/sidecar/internal/forkhook"
)

// A command's start without os/exec's fork (issue 27, item 2). Go's
// syscall.forkExec makes a close-on-exec pipe for the child's errno and
// reads it after the vfork: a blocking syscall.Syscall, a context switch
// when the parent wakes before the child's execve closed the pipe, and a
// wake of the runtime's sysmon thread; and os takes a pidfd that
// watchCommand cannot use, so it opened another.
//
// spawn does the same start with clone(CLONE_VM|CLONE_VFORK|CLONE_PIDFD):
// the pidfd comes from the clone, and the child, which shares the
// parent's memory until execve, reports a failure by storing its errno
// where the parent reads it once the vfork returns (as glibc's
// posix_spawn does): no pipe. The fork keeps the runtime's rules, as
// syscall's does: runtime_BeforeFork blocks signals on the thread and
// poisons the stack guard (any stack growth in the child throws), the
// child runs in its own never-returning frame with raw syscalls only,
// resets the signal handlers and restores the mask through
// runtime_AfterForkInChild (a Go handler must not run in a child sharing
// the parent's memory), and the clone goes through vforkSyscall, which
// keeps its return address out of the stack the child writes. The three
// runtime hooks are package forkhook's (linknamed, shared with the
// jail's forkJail). clone3's CLONE_CLEAR_SIGHAND would spare the child
// its ~65 rt_sigactions, but the jail's seccomp filter refuses clone3 (it
// cannot read its flags).

// vforkSyscall is syscall's rawVforkSyscall (spawn_linux_*.s).
func vforkSyscall(trap, a1, a2, a3 uintptr) (r1, err uintptr)

// errNoSpawn says spawn cannot start cmd; os/exec will.
var errNoSpawn = errors.New("spawn: not supported")

// spawnArgs is what the child needs, made before the fork: the child may
// not allocate.
type spawnArgs struct {
	path, dir  *byte
	argv, envv []*byte // nil-terminated
	fds        [3]int
	cred       bool
	uid, gid   uintptr
	oom        bool // set the child's oom_score_adj (oomFirst)
	nextFD     int  // above every fd in fds
	errno      syscall.Errno
	pidfd      int32 // clone's CLONE_PIDFD stores an int
}

// The child's own OOM score file and oomFirst's score, NUL-terminated
// constants: the child only reads them.
const (
	oomScoreFile = "/proc/self/oom_score_adj\x00"
	oomScore     = "1000"
)

// atFDCWD is AT_FDCWD (-100) as a syscall argument.
const atFDCWD = ^uintptr(99)

// spawn starts cmd as cmd.Start would (but for RLIMIT_NOFILE: see
// startPiped, which calls it only in a jail), for what exec.go's commands
// use: Path, Args, Env (not nil), Dir, and SysProcAttr with Setpgid and at
// most a Credential with no groups; stdio are the command's stdin, stdout
// and stderr (cmd's own are not read). oomFirst makes the child set its
// own oom_score_adj as Handler.oomFirst would, before it drops its ids:
// after the command's execve the sidecar may no longer open the file
// (bench/issue27/session10-exec10.md). It returns the pid and a pidfd of
// it (-1 if the kernel gives none); cmd.Process stays nil. errNoSpawn:
// cmd asks for more, or the clone failed; nothing was started.
func spawn(cmd *exec.Cmd, stdio [3]int, oomFirst bool) (pid, pidfd int, err error) {
	sys := cmd.SysProcAttr
	if sys == nil || cmd.Env == nil || len(cmd.ExtraFiles) > 0 || !plainAttr(sys) {
		return 0, -1, errNoSpawn
	}
	a := spawnArgs{fds: stdio, oom: oomFirst, nextFD: 3}
	for _, fd := range stdio {
		if fd < 0 {
			return 0, -1, errNoSpawn
		}
		a.nextFD = max(a.nextFD, fd+1)
	}
	if a.path, err = syscall.BytePtrFromString(cmd.Path); err != nil {
		return 0, -1, err
	}
	if a.argv, err = syscall.SlicePtrFromStrings(cmd.Args); err != nil {
		return 0, -1, err
	}
	env, err := dedupEnv(cmd.Env)
	if err != nil {
		return 0, -1, err
	}
	if a.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return 0, -1, err
	}
	if cmd.Dir != "" {
		if a.dir, err = syscall.BytePtrFromString(cmd.Dir); err != nil {
			return 0, -1, err
		}
	}
	if c := sys.Credential; c != nil {
		a.cred, a.uid, a.gid = true, uintptr(c.Uid), uintptr(c.Gid)
	}
	a.pidfd = -1
	// As syscall.forkExec: no descriptor made without close-on-exec
	// meanwhile leaks into the child.
	syscall.ForkLock.Lock()
	p, e := spawnChild(&a)
	forkhook.AfterFork()
	syscall.ForkLock.Unlock()
	runtime.KeepAlive(cmd)
	switch {
	case e == unix.EINVAL || e == unix.ENOSYS:
		return 0, -1, errNoSpawn // nothing started: let os/exec say why
	case e != 0:
		return 0, -1, &os.PathError{Op: "fork/exec", Path: cmd.Path, Err: e}
	case a.errno != 0:
		// The child stored why and exited; it may not be a zombie yet.
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(int(p), &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
		if a.pidfd >= 0 {
			_ = syscall.Close(int(a.pidfd))
		}
		return 0, -1, &os.PathError{Op: "fork/exec", Path: cmd.Path, Err: a.errno}
	}
	// A kernel before 5.2 ignores CLONE_PIDFD: no pidfd (-1), and
	// watchCommand opens one or waits as before.
	return int(p), int(a.pidfd), nil
}

// plainAttr says sys asks for what spawn does and nothing more: its own
// process group (the child always calls setpgid), and ids at most.
func plainAttr(sys *syscall.SysProcAttr) bool {
	if !sys.Setpgid {
		return false
	}
	plain := syscall.SysProcAttr{Setpgid: true, Credential: sys.Credential}
	if c := sys.Credential; c != nil && (len(c.Groups) > 0 || c.NoSetGroups) {
		return false
	}
	return sys.Pgid == 0 && sameAttr(*sys, plain)
}

// sameAttr compares the fields of two SysProcAttrs, slices by length.
func sameAttr(a, b syscall.SysProcAttr) bool {
	return a.Chroot == b.Chroot && a.Ptrace == b.Ptrace && a.Setsid == b.Setsid &&
		a.Setctty == b.Setctty && a.Noctty == b.Noctty && a.Ctty == b.Ctty &&
		a.Foreground == b.Foreground && a.Pdeathsig == b.Pdeathsig && a.Cloneflags == b.Cloneflags &&
		a.Unshareflags == b.Unshareflags && len(a.UidMappings) == 0 && len(a.GidMappings) == 0 &&
		len(a.AmbientCaps) == 0 && !a.UseCgroupFD && a.PidFD == nil
}

// spawnChild clones; in the child it sets up and execs, or stores the
// errno in a.errno and exits. In the parent it returns at once: the
// child wrote into this frame, which the parent no longer reads.
//
// After forkhook.BeforeFork: no allocation, no call but raw syscalls and
// the runtime's nosplit hooks.
//
//go:noinline
//go:norace
//go:nocheckptr
func spawnChild(a *spawnArgs) (pid uintptr, err syscall.Errno) {
	var (
		r   uintptr
		e   syscall.Errno
		oe  syscall.Errno // the OOM score's, ignored
		i   int
		fd  uintptr
		nfd int
	)
	forkhook.BeforeFork()
	pid, r = vforkSyscall(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_VFORK|unix.CLONE_PIDFD|uintptr(syscall.SIGCHLD), 0, uintptr(unsafe.Pointer(&a.pidfd)))
	if r != 0 || pid != 0 {
		// The parent, which returns at once: the child wrote this frame.
		// The caller calls forkhook.AfterFork.
		return pid, syscall.Errno(r)
	}
	// The child.
	if _, _, e = syscall.RawSyscall(unix.SYS_SETPGID, 0, 0, 0); e != 0 {
		goto fail
	}
	if a.oom {
		// Best effort, as oomFirst, and while the child has the sidecar's
		// ids, which own the file: after setuid the mm the child shares
		// with the sidecar is no longer dumpable, and the file is root's.
		// A vfork child's score is its own: the kernel does not pass it to
		// the processes that share its mm, as it does for CLONE_VM alone.
		if fd, _, oe = syscall.RawSyscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(unsafe.StringData(oomScoreFile))), unix.O_WRONLY|unix.O_CLOEXEC, 0, 0, 0); oe == 0 {
			_, _, _ = syscall.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.StringData(oomScore))), uintptr(len(oomScore)))
			_, _, _ = syscall.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		}
	}
	// Default handlers, then the thread's mask from before the fork.
	forkhook.AfterForkInChild()
	if a.cred {
		if _, _, e = syscall.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			goto fail
		}
		if _, _, e = syscall.RawSyscall(unix.SYS_SETGID, a.gid, 0, 0); e != 0 {
			goto fail
		}
		if _, _, e = syscall.RawSyscall(unix.SYS_SETUID, a.uid, 0, 0); e != 0 {
			goto fail
		}
	}
	if a.dir != nil {
		if _, _, e = syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(a.dir)), 0, 0); e != 0 {
			goto fail
		}
	}
	// As syscall's child: first move a descriptor that a lower dup would
	// overwrite above them all, then put each in its place.
	nfd = a.nextFD
	for i = 0; i < len(a.fds); i++ {
		if a.fds[i] < i {
			if fd, _, e = syscall.RawSyscall(unix.SYS_DUP3, uintptr(a.fds[i]), uintptr(nfd), unix.O_CLOEXEC); e != 0 {
				goto fail
			}
			a.fds[i] = int(fd)
			nfd++
		}
	}
	for i = 0; i < len(a.fds); i++ {
		if a.fds[i] == i {
			// Already in place: only clear close-on-exec.
			if _, _, e = syscall.RawSyscall(unix.SYS_FCNTL, uintptr(i), unix.F_SETFD, 0); e != 0 {
				goto fail
			}
			continue
		}
		if _, _, e = syscall.RawSyscall(unix.SYS_DUP3, uintptr(a.fds[i]), uintptr(i), 0); e != 0 {
			goto fail
		}
	}
	_, _, e = syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(a.path)),
		uintptr(unsafe.Pointer(&a.argv[0])), uintptr(unsafe.Pointer(&a.envv[0])))
fail:
	a.errno = e
	for {
		_, _, _ = syscall.RawSyscall(unix.SYS_EXIT, 253, 0, 0)
	}
}

// dedupEnv is os/exec's: the last of each name, and no NUL.
func dedupEnv(env []string) ([]string, error) {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("exec: environment variable contains NUL")
		}
		k, _, ok := strings.Cut(kv, "=")
		if strings.HasPrefix(kv, "=") {
			k, _, ok = strings.Cut(kv[1:], "=")
			k = "=" + k
		}
		if !ok {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, kv)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
