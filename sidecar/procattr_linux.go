package sidecar

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts each command in its own process group, so a timeout or a
// cap can kill everything it started, and drops it to the sandbox user.
func (h *Handler) sysProcAttr() (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	switch ra := h.opts.RunAs; {
	case ra == nil:
	case ra.NestedUserNS:
		// The new namespace maps only the sidecar's own ids, so the command
		// is UID inside and nobody more than the sidecar outside. setgroups
		// stays denied: an unprivileged writer of gid_map must deny it.
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: ra.UID, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: ra.GID, HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	default:
		// Empty Groups with NoSetGroups false clears supplementary groups,
		// so the command keeps none of the sidecar's.
		attr.Credential = &syscall.Credential{Uid: uint32(ra.UID), Gid: uint32(ra.GID)}
	}
	return attr, nil
}

// oomFirst makes the kernel's OOM killer pick a jailed command before the
// sidecar: oom_score_adj 1000, which needs no privilege to raise, and the
// command's children inherit. Best effort, right after the start: a
// command that allocates in its first microseconds is scored like the
// sidecar until then.
//
// Raw syscalls, not os.WriteFile: an *os.File of a /proc file costs five
// more per exec (the netpoller's try, which proc files refuse).
func (h *Handler) oomFirst(pid int) {
	if h.opts.RunAs == nil {
		return // not jailed: leave the caller's processes alone
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_, _ = unix.Write(fd, []byte("1000"))
	_ = unix.Close(fd)
}

// commandPipe returns a pipe for a command's stdin or output: ours, the end
// the sidecar keeps, non-blocking and in the netpoller; theirs, the
// command's, blocking and never in the netpoller. os.Pipe would make both
// ends non-blocking and poll both, and os/exec would then make the
// command's end blocking again (File.Fd) and take it out of the poller when
// it is closed: five syscalls more a pipe, on every exec (issue 27).
// read says which end is ours: the read end (output) or the write end
// (stdin).
func commandPipe(read bool) (ours, theirs *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, nil, fmt.Errorf("create pipe: %w", err)
	}
	o, t := p[0], p[1]
	if !read {
		o, t = t, o
	}
	// F_SETFL with 0 clears O_NONBLOCK; a pipe's end has no other status flag.
	if _, err := unix.FcntlInt(uintptr(t), unix.F_SETFL, 0); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, fmt.Errorf("create pipe: %w", err)
	}
	// NewFile polls a non-blocking descriptor and leaves a blocking one alone.
	return os.NewFile(uintptr(o), "|ours"), os.NewFile(uintptr(t), "|theirs"), nil
}

// outputPipe returns a pipe for a command's stdout or stderr: ours, the
// read end, and theirs, the command's, both blocking. Ours sits in no
// poller: watchCommand reads it only when its epoll instance says it is
// ready (a read of a ready pipe does not block), and watchGoroutines makes
// it non-blocking first. Blocking both spares an F_SETFL a pipe, and no
// *os.File of theirs spares F_GETFL (os.NewFile) on every exec (issue 27).
func outputPipe() (ours, theirs int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, fmt.Errorf("create pipe: %w", err)
	}
	return p[0], p[1], nil
}

// physicalDir is the path getcwd gives in dir, which dash exports as PWD
// when its environment has none: the kernel's name of the directory, with
// symlinks resolved, as the sidecar's /proc reads it (the jail's, where
// the command runs).
func physicalDir(dir string) (string, bool) {
	fd, err := syscall.Open(dir, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n, err := syscall.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil || n == 0 || n == len(buf) || buf[0] != '/' {
		return "", false
	}
	p := string(buf[:n])
	if strings.HasSuffix(p, " (deleted)") {
		return "", false
	}
	return p, true
}
