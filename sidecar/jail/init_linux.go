package jail

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

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

// ReapOrphans is PID 1's duty in a jail whose init is the sidecar itself
// (no second process): it reaps the processes orphaned into the jail, and
// nothing else, for good. Call it from the main goroutine with the main
// thread locked (runtime.LockOSThread), and start no process from it.
//
// It never steals an exit status from the sidecar's own commands, whose
// os/exec Wait must see them: the kernel reparents an orphan to the jail's
// child reaper, the main thread of PID 1, and waitid with __WNOTHREAD
// waits only for the calling thread's children, which on the locked main
// thread are the orphans alone (a command is a child of the thread that
// forked it, and no goroutine but this one runs on the main thread;
// wait4 takes __WNOTHREAD as waitid does).
//
// While the thread has a child (an orphan still running), the reaper
// blocks in wait4 for it: the kernel ends that wait as any child of the
// thread exits, with no signal involved, and an orphan reparented meanwhile
// is waited for too. Only with no child left does it sleep, until a
// signal handled on this thread or every: an orphan's SIGCHLD goes to its
// new parent thread first and ends that sleep. That sleep can miss an
// orphan: one reparented and gone before it, or one whose SIGCHLD another
// thread took (a jail under load kept such a zombie for a minute, the
// test's whole wait, in about one run in fifteen); the sidecar wakes the
// reaper after its requests (cmd/boxkite-sidecar's threadTrimmer), which
// is when an exec's orphans appear, and then it waits for them in wait4. A
// wake is not free in an idle sandbox: the runtime hands the sleeping main
// thread's P to a new thread each time, which the sidecar then ends
// (issue 27: with a 5 s bound, 2,000 idle sandboxes kept most of two cores
// busy).
//
// The exception: a command whose forking thread exits (a goroutine locked
// to a thread ends without unlocking it) is reparented to another thread
// of the process, possibly the main one. The sidecar does that only when a
// thread's credentials could not be restored, which leaves it unusable.
//
// woke, when set, is called on the main thread after every wake, before
// the reaper waits or sleeps again; it must not block.
func ReapOrphans(every time.Duration, woke func()) {
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, unix.WALL|unix.WNOTHREAD, nil)
		if err != nil && err != unix.EINTR {
			// ECHILD: no orphan to wait for. Any signal handled on this
			// thread ends the sleep; afresh each time: the kernel writes
			// the time left back into it.
			timeout := unix.NsecToTimespec(int64(every))
			_, _ = unix.Ppoll(nil, &timeout, nil)
		}
		if woke != nil {
			woke()
		}
	}
}
