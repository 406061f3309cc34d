package sidecar

import (
	"context"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// watchGoroutines is watchCommand with a goroutine per output pipe and
// one for the wait: the portable way, and Linux's when the kernel gives
// no pidfd or epoll instance. It closes our ends of the output pipes.
// Output past r.spec.maxOutput is counted, not emitted; the timeout and
// ctx's end kill the command's group.
func (h *Handler) watchGoroutines(ctx context.Context, r running) waited {
	// Non-blocking, so that NewFile polls them and a deadline ends a read.
	_ = syscall.SetNonblock(r.pipes.stdout, true)
	_ = syscall.SetNonblock(r.pipes.stderr, true)
	outs := [2]*os.File{
		os.NewFile(uintptr(r.pipes.stdout), "|ours"),
		os.NewFile(uintptr(r.pipes.stderr), "|ours"),
	}
	var w waited
	var wg sync.WaitGroup
	wg.Go(func() {
		w.stdoutN = h.readCapped(outs[0], r.spec.maxOutput, func(b []byte) { r.emit(api.EventStdout, b) }, r.atLimit)
	})
	wg.Go(func() {
		w.stderrN = h.readCapped(outs[1], r.spec.maxOutput, func(b []byte) { r.emit(api.EventStderr, b) }, r.atLimit)
	})
	readDone := make(chan struct{})
	go func() { wg.Wait(); close(readDone) }()
	waitDone := make(chan struct{})
	var status syscall.WaitStatus
	go func() {
		defer close(waitDone)
		if r.cmd.Process == nil {
			// spawn started it (pid only): wait for it here.
			for {
				if _, err := syscall.Wait4(r.pipes.pid, &status, 0, nil); err != syscall.EINTR {
					return
				}
			}
		}
		_ = waitCmd(r.cmd) // a non-zero exit is a result; ProcessState has it
		status, _ = r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	}()

	select {
	case <-waitDone:
	case <-ctx.Done():
		r.kill()
		<-waitDone
		w.timedOut = context.Cause(ctx) == errTimedOut
	}
	w.killedBeforeExit = r.killed()
	w.status = status

	// Background children may still hold the pipes. Give them pipeGrace,
	// then kill the group and keep reading until the pipes drain: output
	// already written must not be lost. Only a child that left the group can
	// keep a pipe open past that; pipeDrain bounds the wait for it.
	grace := time.NewTimer(pipeGrace)
	defer grace.Stop()
	select {
	case <-readDone:
	case <-grace.C:
	case <-ctx.Done():
	}
	select {
	case <-readDone:
	default:
		r.kill()
		drain := time.NewTimer(pipeDrain)
		defer drain.Stop()
		select {
		case <-readDone:
		case <-drain.C:
			// Pending reads return; the readers close the pipes.
			now := time.Now()
			_ = outs[0].SetReadDeadline(now)
			_ = outs[1].SetReadDeadline(now)
		}
	}
	<-readDone
	return w
}

// readCapped reads r to EOF, closes it and returns how many bytes it
// yielded. It passes the first limit bytes to emit and only counts the
// rest, so a command that writes more is not blocked on a full pipe;
// atLimit is called once, when the output first goes past limit. Output
// of exactly limit bytes is complete, not cut.
func (h *Handler) readCapped(r io.ReadCloser, limit int64, emit func([]byte), atLimit func()) int64 {
	defer r.Close()
	bp := h.readBufs.Get().(*[]byte)
	defer h.readBufs.Put(bp)
	buf := *bp
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n = emitCapped(n, limit, buf[:k], emit, atLimit)
		}
		if err != nil {
			return n
		}
	}
}
