package jail

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init starts path as the jail's one direct child and then acts as PID 1
// until it exits: it reaps every process orphaned into the jail, forwards
// SIGTERM, SIGINT and SIGHUP to the child, and returns the child's exit code
// (128+signal when killed). files become the child's fds 3, 4, ...
//
// Init must be the only code in the process that waits for children, which
// is why it uses ForkExec rather than os/exec: a wait4(-1) reaper would steal
// exit statuses from an exec.Cmd.
func Init(path string, argv, env []string, files []*os.File) (int, error) {
	sigs := make(chan os.Signal, 32)
	// Registered before the fork so an early exit is not missed.
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	defer signal.Stop(sigs)

	fds := []uintptr{0, 1, 2}
	for _, f := range files {
		fds = append(fds, f.Fd())
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: "/", Env: env, Files: fds})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", path, err)
	}
	for _, f := range files {
		_ = f.Close()
	}
	for sig := range sigs {
		if sig != unix.SIGCHLD {
			_ = unix.Kill(pid, sig.(unix.Signal))
			continue
		}
		if code, done := reap(pid); done {
			return code, nil
		}
	}
	panic("unreachable: the signal channel is never closed")
}

// reap collects every exited child; done reports whether pid was among them.
func reap(pid int) (code int, done bool) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || got <= 0 {
			return code, done
		}
		if got != pid {
			continue
		}
		done = true
		switch {
		case ws.Exited():
			code = ws.ExitStatus()
		case ws.Signaled():
			code = 128 + int(ws.Signal())
		}
	}
}
