package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// killWindow is how soon a second interrupt must follow the first to kill
// the command instead of sending it the signal again.
const killWindow = 2 * time.Second

// execInterrupts forwards the signals boxkite exec receives while a
// streamed command runs (Ctrl-C's SIGINT, SIGTERM, SIGHUP) to the command's
// process group, as ssh and docker do: the command takes it its own way
// (a shell's trap runs, a program cleans up) and boxkite exits with the
// code it then exits with (130 for a death by SIGINT). A second one within
// killWindow kills it and ends boxkite at once. A server that names no
// exec id (older than the signal route) gets the old behaviour: the first
// interrupt ends the stream, which kills the command.
type execInterrupts struct {
	c       *client.Client
	sandbox string
	kill    context.CancelFunc // ends the stream: the server kills the command
	sigs    chan os.Signal
	done    chan struct{}

	mu     sync.Mutex
	execID string
	last   time.Time // of the last interrupt forwarded
	killed bool
}

// forwardInterrupts starts forwarding for the stream that kill ends.
func forwardInterrupts(c *client.Client, sandbox string, kill context.CancelFunc) *execInterrupts {
	x := &execInterrupts{c: c, sandbox: sandbox, kill: kill, sigs: make(chan os.Signal, 4), done: make(chan struct{})}
	signal.Notify(x.sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go x.run()
	return x
}

// started records the exec's id (client.ExecStreamStarted).
func (x *execInterrupts) started(execID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.execID = execID
}

func (x *execInterrupts) run() {
	for {
		select {
		case <-x.done:
			return
		case sig := <-x.sigs:
			x.forward(sig)
		}
	}
}

func (x *execInterrupts) forward(sig os.Signal) {
	x.mu.Lock()
	now := time.Now()
	id, again := x.execID, !x.last.IsZero() && now.Sub(x.last) < killWindow
	if id == "" || again {
		x.killed = true
		x.mu.Unlock()
		x.kill()
		return
	}
	x.last = now
	x.mu.Unlock()
	name := api.SignalINT
	switch sig {
	case syscall.SIGTERM:
		name = api.SignalTERM
	case syscall.SIGHUP:
		name = api.SignalHUP
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A command that ended meanwhile is not found: its stream has its end.
	_, _ = x.c.SignalExec(ctx, x.sandbox, id, name)
}

// stop ends the forwarding; it reports whether a second interrupt killed
// the command.
func (x *execInterrupts) stop() bool {
	signal.Stop(x.sigs)
	close(x.done)
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.killed
}
