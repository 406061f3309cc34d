package sidecar

import (
	"errors"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// waitCmd is cmd.Wait without a thread blocked for the whole run (issue
// 27: an idle sidecar holds four threads). os/exec waits in a blocking
// waitid on the child's pidfd, which takes an OS thread off the runtime
// until the command exits; with GOMAXPROCS 1 the runtime starts another
// to run goroutines, and every concurrent command adds one. Here the wait
// for the exit goes through the netpoller instead: a PIDFD_NONBLOCK pidfd
// becomes readable when the child has exited (it is a zombie, not
// reaped), and only then does cmd.Wait reap it, without blocking.
//
// A pidfd that cannot be had (a kernel before 5.10, or the poller refuses
// it) falls back to cmd.Wait alone.
func waitCmd(cmd *exec.Cmd) error {
	exitedWait(cmd.Process.Pid)
	return cmd.Wait()
}

// exitedWait returns once the child pid has exited, or at once if that
// cannot be waited for through the netpoller. It reaps nothing: waitid
// with WNOWAIT leaves the zombie for cmd.Wait, which holds its own pidfd,
// so the pid cannot be reused meanwhile.
func exitedWait(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	// NewFile sees the descriptor is non-blocking and registers it with
	// the netpoller.
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		// On a non-blocking pidfd waitid does not block: EAGAIN while the
		// child runs. Any other error (ECHILD: already reaped) ends the
		// wait too; cmd.Wait reports it.
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT, nil)
		return !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR)
	})
}
