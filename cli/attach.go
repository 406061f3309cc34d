package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/boxkite/boxkite/client"
)

// detachKey is Ctrl-], as in telnet and docker attach.
const detachKey = 0x1d

func newAttachCmd(app *App) *cobra.Command {
	var (
		ref      string
		readOnly bool
	)
	cmd := &cobra.Command{
		Use: "attach [-s ID] [--read-only]",
		Example: `  boxkite attach -s build
  boxkite attach -s build --read-only`,
		Short: "Use the sandbox's terminal from this one (Ctrl-] detaches)",
		Long: `Attach this terminal to the sandbox's shared terminal: what you type goes to
its shell, what it prints appears here, and resizing this window resizes it.
Everyone attached sees the same screen, and the shell keeps running after you
detach with Ctrl-]. When the shell exits, attach exits with its status
(128+N when signal N ended it), as ssh does; a detach exits 0. Detaching resets what a program still running there set in
this terminal (the alternate screen, mouse reporting, a hidden cursor,
bracketed paste), so your shell is as you left it. With --read-only you watch
without typing. Needs an admin API key; every attachment is in the sandbox's
audit log.`,
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAttach(cmd.Context(), app, ref, readOnly)
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "watch only; keystrokes are not sent")
	return cmd
}

// terminalConn is the attachment as the relay uses it; *client.Terminal has it.
type terminalConn interface {
	io.ReadWriter
	Resize(cols, rows int) error
}

func runAttach(ctx context.Context, app *App, ref string, readOnly bool) error {
	if !app.IO.InTTY {
		// Without a terminal the relay would read stdin to its end and
		// detach at once, looking like success.
		return usageErrorf("run it from a terminal; to run a command without one use 'boxkite exec' (or ssh <sandbox-id>@bastion 'cmd')",
			"attach needs a terminal on stdin")
	}
	c, sb, err := target(ctx, app, ref, false)
	if err != nil {
		return err
	}
	_, code, err := attachSession(ctx, c, sb.ID, readOnly, app.IO, "")
	if err == nil && code != 0 {
		// As ssh does: the shell's exit status is attach's own, so a
		// script can tell 'exit 3' from a detach (0).
		return &exitStatus{code: code}
	}
	return err
}

// attachSession relays stdio to the terminal of sandbox id until the user
// detaches or the shell exits; boxkite attach, tui and handoff share it.
// typed, when not empty, is sent first, as if typed (handoff starts its
// resume command so). exited says the shell exited (not a detach), code
// its exit status (128+N when signal N ended it), 0 after a detach or
// when the sidecar does not tell it (older than the exit message).
func attachSession(ctx context.Context, c *client.Client, id string, readOnly bool, stdio IO, typed string) (exited bool, code int, err error) {
	t, err := c.Attach(ctx, id, readOnly)
	if err != nil {
		return false, 0, fmt.Errorf("attach to sandbox %s: %w", id, err)
	}
	defer t.Close()
	restore, err := makeRaw(stdio)
	if err != nil {
		return false, 0, err
	}
	// Deferred as well, so a panic still gives the user their terminal back.
	defer restore()
	mode := ""
	if readOnly {
		mode = " read-only"
	}
	// Said once the terminal is raw, so keys typed after it go to the
	// sandbox alone; in raw mode a newline no longer returns the cursor.
	eol := "\n"
	if stdio.InTTY {
		eol = "\r\n"
	}
	fmt.Fprintf(stdio.ErrOut, "attached%s to sandbox %s; Ctrl-] detaches%s", mode, id, eol)
	if typed != "" {
		if _, err := io.WriteString(t, typed); err != nil {
			return false, 0, fmt.Errorf("type into sandbox %s: %w", id, err)
		}
	}
	winch := make(chan os.Signal, 1)
	notifyResize(winch)
	defer signal.Stop(winch)

	screen := newModeWriter(stdio.Out)
	relayed := stdio
	relayed.Out = screen
	detached, err := relayTerminal(ctx, t, relayed, readOnly, winch)
	// Modes a program left set (the alternate screen, mouse reporting, a
	// hidden cursor) are the sandbox's, not this terminal's.
	screen.end(stdio.OutTTY)
	restore()
	if stdio.ErrTTY {
		fmt.Fprintln(stdio.ErrOut) // the remote cursor may be mid-line
	}
	switch {
	case detached:
		fmt.Fprintln(stdio.ErrOut, "detached")
		return false, 0, nil
	case errors.Is(err, io.EOF):
		code, sig, _ := t.Exited()
		switch {
		case sig != 0:
			fmt.Fprintf(stdio.ErrOut, "the shell was killed by signal %d (exit code %d)\n", sig, code)
		case code != 0:
			fmt.Fprintf(stdio.ErrOut, "the shell exited (exit code %d)\n", code)
		default:
			fmt.Fprintln(stdio.ErrOut, "the shell exited")
		}
		return true, code, nil
	}
	if e, ok := errors.AsType[*client.SandboxEndedError](err); ok && e.Paused() {
		return false, 0, &hintError{err: e, hint: fmt.Sprintf("resume it with 'boxkite session resume %s', then attach again", id)}
	}
	if e, ok := errors.AsType[*client.SandboxEndedError](err); ok {
		return false, 0, &hintError{err: e, hint: "create a new one with 'boxkite session create'"}
	}
	return false, 0, err
}

// makeRaw puts stdin in raw mode when it is a terminal, so every key
// (Ctrl-C included) goes to the sandbox, and returns the idempotent undo.
func makeRaw(stdio IO) (func(), error) {
	fd, ok := fdOf(stdio.In)
	if !ok || !stdio.InTTY {
		return func() {}, nil
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("set the terminal to raw mode: %w", err)
	}
	return sync.OnceFunc(func() { term.Restore(fd, old) }), nil
}

func fdOf(v any) (int, bool) {
	f, ok := v.(interface{ Fd() uintptr })
	if !ok {
		return 0, false
	}
	return int(f.Fd()), true
}

// terminalSize is the size of whichever of stdout and stdin is a terminal.
func terminalSize(stdio IO) (cols, rows int, ok bool) {
	for _, s := range []any{stdio.Out, stdio.In} {
		if fd, isFile := fdOf(s); isFile && term.IsTerminal(fd) {
			if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
				return w, h, true
			}
		}
	}
	return 0, 0, false
}

// relayTerminal copies keystrokes to t and t's output to stdout until the
// user detaches (detached true), stdin ends (detached true, unless
// read-only: a watcher has nothing to type anyway), the remote side closes
// (io.EOF) or ctx ends. A signal on winch sends the terminal's new size.
func relayTerminal(ctx context.Context, t terminalConn, stdio IO, readOnly bool, winch <-chan os.Signal) (bool, error) {
	resize := func() error {
		if cols, rows, ok := terminalSize(stdio); ok {
			return t.Resize(cols, rows)
		}
		return nil
	}
	if err := resize(); err != nil {
		return false, err
	}
	type end struct {
		detached bool
		err      error
	}
	ends := make(chan end, 2)
	go func() {
		_, err := io.Copy(stdio.Out, t)
		if err == nil {
			err = io.EOF // io.Copy reports the remote's normal close as nil
		}
		ends <- end{err: err}
	}()
	go func() {
		// Stays blocked in Read after a detach when stdin is a terminal;
		// the process is about to exit, so that is harmless.
		buf := make([]byte, 32<<10)
		for {
			n, err := stdio.In.Read(buf)
			data := buf[:n]
			i := bytes.IndexByte(data, detachKey)
			if i >= 0 {
				data = data[:i]
			}
			if len(data) > 0 && !readOnly {
				if _, werr := t.Write(data); werr != nil {
					ends <- end{err: werr}
					return
				}
			}
			switch {
			case i >= 0:
				ends <- end{detached: true}
				return
			case err != nil && readOnly:
				return // nothing to type anyway: keep watching
			case err != nil:
				ends <- end{detached: true}
				return
			}
		}
	}()
	for {
		select {
		case <-winch:
			if err := resize(); err != nil {
				return false, err
			}
		case e := <-ends:
			return e.detached, e.err
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}
