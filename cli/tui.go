package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/cancelreader"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/tui"
)

func newTUICmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use: "tui",
		Example: `  boxkite tui
  boxkite --context staging tui`,
		Short: "Browse sandboxes and follow their logs interactively",
		Long: `Open the interactive sandbox browser: the list of sandboxes (filter with /,
sort with s), a sandbox's detail (resources, processes, recent audit), its
live audit log (follow, search, expand exec entries), an exec prompt, a create
form, destroy with confirmation and attach (Ctrl-] comes back). Press ? for
every key, q to quit. It works against the local server (boxkite up) and a
hosted one alike, and keeps retrying while the server is unreachable.
NO_COLOR or CLICOLOR=0 turns colour off. See docs/tui.md.`,
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTUI(cmd.Context(), app)
		},
	}
}

func runTUI(ctx context.Context, app *App) error {
	if !app.IO.InTTY || !app.IO.OutTTY {
		return usageErrorf("run it in a terminal; for scripts use boxkite session ls and boxkite watch",
			"boxkite tui needs a terminal")
	}
	cfg, c, err := app.configClient()
	if err != nil {
		return err
	}
	m := tui.New(tui.Options{Source: tuiSource{Client: c, ctx: ctx}, Color: app.IO.Color, Output: app.IO.Out, Context: contextLabel(cfg.Context, cfg.Sources[keyBaseURL], cfg.Sources[keyAPIKey]), Organization: cfg.OrgName})
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithAltScreen(),
		tea.WithInput(app.IO.In), tea.WithOutput(app.IO.Out))
	if _, err := p.Run(); err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return nil // interrupted or terminated: the terminal is restored
		}
		return fmt.Errorf("run the tui: %w", err)
	}
	return nil
}

// tuiSource is the TUI's view of the control plane: the client, plus
// attaching through the same relay as boxkite attach.
type tuiSource struct {
	*client.Client
	ctx context.Context
}

func (s tuiSource) Attach(id string) tea.ExecCommand {
	return &attachCommand{c: s.Client, ctx: s.ctx, id: id}
}

// attachCommand runs an attachment as a tea.ExecCommand: bubbletea
// releases the terminal (leaving the alternate screen and raw mode), Run
// relays until the user detaches, and bubbletea takes the terminal back.
type attachCommand struct {
	c   *client.Client
	ctx context.Context
	id  string

	in          io.Reader
	out, errOut io.Writer
}

func (a *attachCommand) SetStdin(r io.Reader)  { a.in = r }
func (a *attachCommand) SetStdout(w io.Writer) { a.out = w }
func (a *attachCommand) SetStderr(w io.Writer) { a.errOut = w }

func (a *attachCommand) Run() error {
	stdio := IO{In: a.in, Out: a.out, ErrOut: a.errOut}
	if stdio.In == nil {
		stdio.In = os.Stdin
	}
	if stdio.Out == nil {
		stdio.Out = os.Stdout
	}
	if stdio.ErrOut == nil {
		stdio.ErrOut = os.Stderr
	}
	f, isFile := stdio.In.(*os.File)
	stdio.InTTY = isFile && term.IsTerminal(int(f.Fd()))
	if fd, ok := fdOf(stdio.Out); ok {
		stdio.OutTTY = term.IsTerminal(fd) // so detaching resets the modes the sandbox's program set
	}
	if fd, ok := fdOf(stdio.ErrOut); ok {
		stdio.ErrTTY = term.IsTerminal(fd)
	}
	if isFile {
		// The relay's reader would otherwise stay blocked in Read after a
		// detach and swallow the next key meant for the TUI; cancelling it
		// ends that Read. The relay still sees the *os.File for raw mode.
		cr, err := cancelreader.NewReader(f)
		if err != nil {
			return fmt.Errorf("read the terminal: %w", err)
		}
		defer cr.Cancel()
		stdio.In = fileReader{Reader: cr, f: f}
	}
	// The TUI carries on whatever the shell's status, and says it.
	exited, code, err := attachSession(a.ctx, a.c, a.id, false, stdio, "")
	if err == nil && exited {
		return &tui.ShellExited{Code: code}
	}
	return err
}

// fileReader reads through a cancelable reader but offers the file's
// descriptor, so makeRaw and terminalSize still find the terminal.
type fileReader struct {
	io.Reader
	f *os.File
}

func (r fileReader) Fd() uintptr { return r.f.Fd() }
