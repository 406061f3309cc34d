package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/boxkite/boxkite/client/api"
	"golang.org/x/sys/unix"
)

// An exec's wait for its command on Linux (issue 27, item 2). The
// handler's goroutine alone reads both output pipes and learns of the
// exit, through an epoll instance of the exec's own that sits in the
// runtime's netpoller: no goroutine per pipe, none for the wait, none to
// join them. And once the command runs, every syscall of the wait is raw
// and cannot block: reads of pipes epoll found ready, waitid with WNOHANG on a
// pidfd, epoll_wait with no timeout, epoll_ctl and close. Through
// syscall.Syscall, the first syscall after the process idled wakes the
// runtime's sysmon thread from its deep sleep, and an awake sysmon then
// polls every 20-70 µs until the process idles again: that wake and those
// polls, once for the request and again when the command exited, were
// half the sidecar's context switches per exec. The response's write and
// the next request's read are raw too (cmd/boxkite-sidecar's rawConn), so
// from the command's exit to the next request sysmon sleeps
// (bench/issue27/session8-serve8.md).

// watchCommand reads r's output and waits for it: through an execPoller
// and the pidfd spawn gave (or one it opens when os/exec started the
// command), or with goroutines (watchGoroutines) when the kernel gives no
// pidfd or epoll instance. It closes our ends of the output pipes and reaps the
// command.
func (h *Handler) watchCommand(ctx context.Context, r running) waited {
	pidfd := r.pipes.pidfd
	if h.opts.goroutineWait {
		if pidfd >= 0 {
			_ = syscall.Close(pidfd)
			r.pipes.pidfd = -1
		}
		return h.watchGoroutines(ctx, r)
	}
	if pidfd < 0 {
		fd, err := unix.PidfdOpen(r.pipes.pid, 0)
		if err != nil {
			return h.watchGoroutines(ctx, r)
		}
		pidfd = fd
	}
	p, err := h.pollers.get()
	if err == nil {
		err = p.add(r.pipes.stdout, r.pipes.stderr, pidfd)
		if err != nil {
			h.pollers.put(p)
		}
	}
	if err != nil {
		_ = syscall.Close(pidfd)
		r.pipes.pidfd = -1
		return h.watchGoroutines(ctx, r)
	}
	if r.cmd.Process != nil {
		// Waited for through our pidfd: os's handle goes now, while the
		// syscalls need not be raw yet.
		_ = r.cmd.Process.Release()
	}
	w := h.await(ctx, r, p, pidfd)
	h.pollers.put(p)
	return w
}

// execPoller is an epoll instance in the runtime's netpoller: readable
// when any descriptor added to it is ready. An exec's pipes and pidfd are
// added level-triggered, so one read of a pipe a round leaves the rest
// for the next, and stdout, stderr and the exit are served in turn.
type execPoller struct {
	fd     int
	f      *os.File // fd, non-blocking, in the netpoller; kept for the next exec
	rc     syscall.RawConn
	broken bool // it failed: closed, not kept
}

// pollerPool keeps the execPollers of finished execs: one is made only
// when more execs than ever before run at once.
type pollerPool struct {
	mu   sync.Mutex
	free []*execPoller
}

func (pp *pollerPool) get() (*execPoller, error) {
	pp.mu.Lock()
	if n := len(pp.free); n > 0 {
		p := pp.free[n-1]
		pp.free = pp.free[:n-1]
		pp.mu.Unlock()
		return p, nil
	}
	pp.mu.Unlock()
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create epoll: %w", err)
	}
	// NewFile puts only a non-blocking descriptor in the netpoller.
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("create epoll: %w", err)
	}
	f := os.NewFile(uintptr(fd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("create epoll: %w", err)
	}
	return &execPoller{fd: fd, f: f, rc: rc}, nil
}

// put keeps p, which watches no descriptor any more.
func (pp *pollerPool) put(p *execPoller) {
	if p.broken {
		p.f.Close()
		return
	}
	_ = p.f.SetReadDeadline(time.Time{})
	pp.mu.Lock()
	pp.free = append(pp.free, p)
	pp.mu.Unlock()
}

// add watches fds for input, or none of them.
func (p *execPoller) add(fds ...int) error {
	for i, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			for _, fd := range fds[:i] {
				_ = unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil)
			}
			return fmt.Errorf("watch command: %w", err)
		}
	}
	return nil
}

// drop stops watching fd and closes it. Removed first: a copy of fd in a
// child that another exec forked and that has not reached execve yet
// would keep it in this instance, which the next exec reuses, past close.
func (p *execPoller) drop(fd int) {
	_, _, _ = syscall.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.fd), unix.EPOLL_CTL_DEL, uintptr(fd), 0, 0, 0)
	_, _, _ = syscall.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// await is watchCommand through p, which watches r's output pipes and
// pidfd; it drops all three. Output past r.spec.maxOutput is counted, not
// emitted. ctx's end kills the command's group; once the command exited,
// background children that still hold the pipes get pipeGrace, then the
// group is killed and the pipes read until they drain, for at most
// pipeDrain (only a process that left the group can hold them so long).
func (h *Handler) await(ctx context.Context, r running, p *execPoller, pidfd int) waited {
	bp := h.readBufs.Get().(*[]byte)
	defer h.readBufs.Put(bp)
	// One object for the wait's state: closures over locals would move
	// each local they share to the heap (issue 27: ~11 objects an exec).
	a := &awaiting{r: r, p: p, pidfd: pidfd, buf: *bp, streams: [2]int{r.pipes.stdout, r.pipes.stderr}}
	round := a.round
	// A past deadline wakes the wait when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = p.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var ctxDone bool
	var exitAt, killAt time.Time
	for !a.exited || a.open() {
		// The deadline first, then ctx: a cancel after the check sets a
		// past deadline after this one.
		switch {
		case !killAt.IsZero():
			_ = p.f.SetReadDeadline(killAt.Add(pipeDrain))
		case a.exited:
			_ = p.f.SetReadDeadline(exitAt.Add(pipeGrace))
		default:
			_ = p.f.SetReadDeadline(time.Time{})
		}
		if !ctxDone && ctx.Err() != nil {
			ctxDone = true
			r.kill()
			a.w.timedOut = !a.exited && context.Cause(ctx) == errTimedOut
		}
		if a.exited && ctxDone && killAt.IsZero() {
			r.kill() // no grace once ctx ended
			killAt = time.Now()
			continue
		}
		err := p.rc.Read(round)
		if err == nil {
			err = a.pollErr
		}
		if a.exited && exitAt.IsZero() {
			exitAt = time.Now()
		}
		switch {
		case err == nil:
		case !errors.Is(err, os.ErrDeadlineExceeded):
			// The instance failed (never seen): kill, reap, and end as a
			// drain would.
			h.log.ErrorContext(ctx, "exec: wait for command", slog.Any("err", err))
			p.broken = true
			r.kill()
			if !a.exited {
				a.exited = true
				a.w.killedBeforeExit = true
				_, _ = syscall.Wait4(r.pipes.pid, &a.w.status, 0, nil)
				p.drop(pidfd)
			}
			a.dropAll()
		case !a.exited:
			// ctx ended: the next round kills and waits on.
		case killAt.IsZero() && !time.Now().Before(exitAt.Add(pipeGrace)):
			killAt = time.Now()
			if h.opts.slowKill != nil {
				h.opts.slowKill()
			}
			r.kill()
		case !killAt.IsZero() && !time.Now().Before(killAt.Add(pipeDrain)):
			// What the pipes hold is read before they go: a wait the
			// scheduler left past the deadline (a loaded host) must not
			// cut output already written.
			a.drainReady()
			a.dropAll()
		}
	}
	return a.w
}

// awaiting is an await's state between rounds.
type awaiting struct {
	r       running
	p       *execPoller
	pidfd   int
	buf     []byte
	w       waited
	streams [2]int // the open output pipes: stdout, stderr; -1 once one reached its end
	exited  bool   // reaped
	events  [3]unix.EpollEvent
	pollErr error // an epoll instance that fails fails for good
}

func (a *awaiting) open() bool { return a.streams[0] >= 0 || a.streams[1] >= 0 }

// drainReady reads what the pipes hold now, without waiting for more, up
// to outputDrainMax: past it, a process that left the group is writing.
func (a *awaiting) drainReady() {
	from := a.w.stdoutN + a.w.stderrN
	for a.open() && a.w.stdoutN+a.w.stderrN-from <= outputDrainMax && a.round(0) {
	}
}

func (a *awaiting) dropAll() {
	for i, fd := range a.streams {
		if fd >= 0 {
			a.p.drop(fd)
			a.streams[i] = -1
		}
	}
}

// round serves what is ready; false (wait for more) when nothing is.
func (a *awaiting) round(uintptr) bool {
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(a.p.fd), uintptr(unsafe.Pointer(&a.events[0])), uintptr(len(a.events)), 0, 0, 0)
	if e != 0 && e != unix.EINTR {
		a.pollErr = e
		return true
	}
	if e != 0 || n == 0 {
		return false
	}
	for _, ev := range a.events[:n] {
		switch fd := int(ev.Fd); {
		case fd == a.pidfd && !a.exited:
			a.reap()
		case fd == a.streams[0]:
			a.read(0)
		case fd == a.streams[1]:
			a.read(1)
		}
	}
	return true
}

// read serves one read of output pipe i, which epoll said is ready: it
// does not block, though the pipe may be a blocking one (outputPipe).
func (a *awaiting) read(i int) {
	fd := a.streams[i]
	n, _, e := syscall.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&a.buf[0])), uintptr(len(a.buf)))
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
	case e == 0 && n > 0:
		b := a.buf[:n]
		limit := a.r.spec.maxOutput
		stream, count := api.EventStdout, &a.w.stdoutN
		if i == 1 {
			stream, count = api.EventStderr, &a.w.stderrN
		}
		// emitCapped's rule, without a closure an exec.
		k := int64(len(b))
		if keep := min(k, limit-*count); keep > 0 {
			a.r.emit(stream, b[:keep])
		}
		if *count <= limit && *count+k > limit {
			a.r.atLimit()
		}
		*count += k
	default: // EOF, or an error no retry mends
		a.streams[i] = -1
		a.p.drop(fd)
	}
}

// reap takes the command's exit when it came.
func (a *awaiting) reap() {
	var info unix.Siginfo
	_, _, e := syscall.RawSyscall6(unix.SYS_WAITID, unix.P_PIDFD, uintptr(a.pidfd), uintptr(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOHANG, 0, 0)
	if e == unix.EINTR || e == 0 && siginfoPid(&info) == 0 {
		return // still running
	}
	a.exited = true
	a.w.killedBeforeExit = a.r.killed()
	if e == 0 {
		a.w.status = waitStatus(&info)
	}
	a.p.drop(a.pidfd)
}

// siginfoFields is where the fields of a child's state change start in
// a siginfo: after si_signo, si_errno and si_code, at the union, which is
// aligned for a pointer.
const siginfoFields = 3*4 + unsafe.Sizeof(uintptr(0)) - 4

// siginfoPid is si_pid of the siginfo of a child's state change.
func siginfoPid(info *unix.Siginfo) int32 {
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), siginfoFields))
}

// waitStatus is the wait status of the exit a waitid's info describes:
// si_status, after si_pid and si_uid, is the exit code or the signal.
func waitStatus(info *unix.Siginfo) syscall.WaitStatus {
	status := *(*int32)(unsafe.Add(unsafe.Pointer(info), siginfoFields+8))
	const cldExited, cldKilled, cldDumped = 1, 2, 3 // si_code, <asm-generic/siginfo.h>
	switch info.Code {
	case cldExited:
		return syscall.WaitStatus(status&0xff) << 8
	case cldKilled:
		return syscall.WaitStatus(status & 0x7f)
	case cldDumped:
		return syscall.WaitStatus(status&0x7f) | 0x80
	}
	return 0
}
