package sidecar

import (
	"context"
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
	pumps := []*outputPump{{r: outs[0]}, {r: outs[1]}}
	var w waited
	var wg sync.WaitGroup
	wg.Go(func() {
		w.stdoutN = h.readCapped(pumps[0], r.spec.maxOutput, func(b []byte) { r.emit(api.EventStdout, b) }, r.atLimit)
	})
	wg.Go(func() {
		w.stderrN = h.readCapped(pumps[1], r.spec.maxOutput, func(b []byte) { r.emit(api.EventStderr, b) }, r.atLimit)
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
	// already written must not be lost, however late its reader is
	// scheduled (a wall-clock deadline cut it on a loaded host). Only a
	// child that left the group can keep a pipe open past that; the time
	// a reader waits in Read for it is bounded by pipeDrain (drainKilled).
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
		if h.opts.slowKill != nil {
			h.opts.slowKill()
		}
		r.kill()
		drainKilled(readDone, pumps)
	}
	<-readDone
	return w
}

// readCapped reads o's pipe to its end, closes it and returns how many
// bytes it yielded. It passes the first limit bytes to emit and only counts
// the rest, so a command that writes more is not blocked on a full pipe;
// atLimit is called once, when the output first goes past limit. Output
// of exactly limit bytes is complete, not cut. o tells drainKilled when
// it waits in Read and how much it read.
func (h *Handler) readCapped(o *outputPump, limit int64, emit func([]byte), atLimit func()) int64 {
	defer o.r.Close()
	bp := h.readBufs.Get().(*[]byte)
	defer h.readBufs.Put(bp)
	buf := *bp
	var n int64
	for {
		o.inRead.Store(true)
		k, err := o.r.Read(buf)
		o.inRead.Store(false)
		o.read.Add(int64(k))
		if k > 0 {
			if h.opts.slowOutput != nil {
				h.opts.slowOutput()
			}
			n = emitCapped(n, limit, buf[:k], emit, atLimit)
		}
		if err != nil {
			return n
		}
	}
}
