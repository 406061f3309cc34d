package sidecar

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// shellIdle reports whether the shell pid on the terminal master waits
// for input with none left to read: it sleeps, no job holds the
// terminal's foreground, no child of its own process group runs (a
// command substitution), and the terminal has no unread input. The
// shell's state is read before and after the rest: when it slept through
// the whole check (the same context switch count), the check saw one
// moment of it, not a shell that ran in between.
func shellIdle(master *os.File, pid int) (bool, error) {
	before, err := schedOf(pid)
	if err != nil || before.state != 'S' {
		return false, err
	}
	var fg, inq int
	var ioErr error
	rc, err := master.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("shell idle: %w", err)
	}
	if err := rc.Control(func(fd uintptr) { fg, inq, ioErr = terminalState(int(fd)) }); err != nil {
		return false, fmt.Errorf("shell idle: %w", err)
	}
	if ioErr != nil || fg != pid || inq != 0 {
		return false, ioErr
	}
	if busy, err := groupChildRuns(pid); err != nil || busy {
		return false, err
	}
	after, err := schedOf(pid)
	return err == nil && after == before, err
}

// terminalState is the foreground process group of the terminal whose
// master is fd, and how many input bytes its shell has not read yet.
func terminalState(fd int) (fg, inq int, err error) {
	if fg, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil {
		return 0, 0, fmt.Errorf("terminal foreground: %w", err)
	}
	slave, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		return 0, 0, fmt.Errorf("open the terminal's peer: %w", errno)
	}
	defer unix.Close(int(slave))
	// What was just written to the master may still be on its way to the
	// line discipline (the tty's flip buffer): a poll of the terminal's
	// side waits for that work when no input is ready yet.
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(slave), Events: unix.POLLIN}}, 0)
	if inq, err = unix.IoctlGetInt(int(slave), unix.TIOCINQ); err != nil {
		return 0, 0, fmt.Errorf("terminal input queue: %w", err)
	}
	return fg, inq, nil
}

// pendingOutput is how many bytes of output wait on master to be read.
func pendingOutput(master *os.File) (int, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		// As for input (terminalState): the poll waits for what the
		// shell wrote last to reach the master's side.
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	})
	if err != nil {
		return 0, err
	}
	return n, ioErr
}

// sched is a process's state and context switch counts.
type sched struct {
	state               byte
	voluntary, involunt string
}

func schedOf(pid int) (sched, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return sched{}, fmt.Errorf("read process status: %w", err)
	}
	var s sched
	for line := range bytes.Lines(b) {
		k, v, _ := strings.Cut(strings.TrimSpace(string(line)), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if v != "" {
				s.state = v[0]
			}
		case "voluntary_ctxt_switches":
			s.voluntary = v
		case "nonvoluntary_ctxt_switches":
			s.involunt = v
		}
	}
	return s, nil
}

// groupChildRuns reports whether a child of pid runs in pid's process
// group (the shell's own: jobs get groups of their own).
func groupChildRuns(pid int) (bool, error) {
	p := strconv.Itoa(pid)
	b, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
	if err != nil {
		return false, fmt.Errorf("read the shell's children: %w", err)
	}
	for _, child := range strings.Fields(string(b)) {
		stat, err := os.ReadFile("/proc/" + child + "/stat")
		if err != nil {
			continue // it exited
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and ')'.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		if f := strings.Fields(string(rest)); len(f) > 2 && f[2] == p {
			return true, nil
		}
	}
	return false, nil
}

// pollable returns master as a File in non-blocking mode, which Go's
// poller serves (pty leaves it blocking): a read deadline then wakes the
// pump's pending read, which a flush needs. master is closed.
func pollable(master *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(master.Fd()))
	if err != nil {
		return nil, fmt.Errorf("duplicate the terminal: %w", err)
	}
	master.Close()
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("terminal non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// setWinsize resizes the terminal whose master is f, without f.Fd (which
// would make f blocking again).
func setWinsize(f *os.File, cols, rows uint16) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	})
	if err != nil {
		return err
	}
	return ioErr
}
