package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Environment variables that pick the pager, as git and gh read them.
const (
	envPager      = "BOXKITE_PAGER"
	envPagerOther = "PAGER"
	defaultPager  = "less -FRX"
)

// annotationPager marks the commands whose output goes through the pager
// on a terminal, for tests of the tree.
const annotationPager = "boxkite:pager"

// pageable sends cmd's output through a pager when stdout is a terminal:
// BOXKITE_PAGER, else PAGER, else less -FRX (which quits at once when the
// output fits the screen). BOXKITE_PAGER=cat (or set empty, or PAGER
// set empty) turns paging off; a pipe or a file is never paged. The pager starts with the first
// byte written, so a command that fails before printing never opens one.
// NewRoot wraps the RunE of every command so marked.
func pageable(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationPager] = "true"
}

// runPaged runs the command's RunE with app.IO.Out behind the pager when
// the command is pageable and stdout is a terminal. The pager is waited
// for before returning, so an error prints after the paged output.
func runPaged(app *App, run func() error) error {
	if !app.IO.OutTTY {
		return run()
	}
	if _, ok := fdOf(app.IO.Out); !ok {
		return run() // not the process's stdout
	}
	cmdline := pagerCommand(os.LookupEnv)
	if cmdline == "" {
		return run()
	}
	if _, err := exec.LookPath(strings.Fields(cmdline)[0]); err != nil {
		if cmdline != defaultPager { // no less: print directly, as before
			fmt.Fprintf(app.IO.ErrOut, "warning: pager %q not found; printing without it\n", cmdline)
		}
		return run()
	}
	orig := app.IO.Out
	p := &pagerOut{cmdline: cmdline, term: orig, errOut: app.IO.ErrOut, width: terminalWidth(orig)}
	app.IO.Out = p
	defer func() { app.IO.Out = orig }()
	err := run()
	if werr := p.wait(); werr != nil && err == nil {
		err = werr
	}
	for _, n := range p.notes {
		fmt.Fprintln(p.errOut, n)
	}
	if err != nil && p.closed && errors.Is(err, syscall.EPIPE) {
		return nil // the reader quit the pager early: not a failure
	}
	return err
}

// pagerCommand is the pager's command line, "" when paging is off.
func pagerCommand(lookup func(string) (string, bool)) string {
	cmdline, set := lookup(envPager)
	if !set {
		if cmdline, set = lookup(envPagerOther); !set {
			cmdline = defaultPager
		}
	}
	cmdline = strings.TrimSpace(cmdline) // set but empty: off, as in git
	if cmdline == "cat" {
		return ""
	}
	return cmdline
}

// pagerOut is stdout while a command is paged: the pager's stdin, started
// on the first write. It reports the terminal's width, so tables still fit
// the screen behind the pager.
type pagerOut struct {
	cmdline string
	term    io.Writer // the terminal: the pager's stdout
	errOut  io.Writer
	width   int

	cmd     *exec.Cmd
	in      io.WriteCloser
	started bool
	closed  bool  // the pager went away before all was written
	err     error // starting it failed: write to the terminal instead
	notes   []string
}

// noteAfterOutput prints a line to stderr after the command's output:
// once the pager has quit when the output is paged (stderr written while
// the pager shows the screen would land in the middle of it), at once
// otherwise.
func noteAfterOutput(app *App, note string) {
	if p, ok := app.IO.Out.(*pagerOut); ok && p.started && p.err == nil {
		p.notes = append(p.notes, note)
		return
	}
	fmt.Fprintln(app.IO.ErrOut, note)
}

func (p *pagerOut) TerminalWidth() int { return p.width }

func (p *pagerOut) Write(b []byte) (int, error) {
	if !p.started {
		p.start()
	}
	switch {
	case p.err != nil:
		return p.term.Write(b)
	case p.closed:
		return len(b), nil // nobody reads: drop the rest quietly
	}
	n, err := p.in.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		p.closed = true
		return len(b), nil
	}
	return n, err
}

func (p *pagerOut) start() {
	p.started = true
	cmd := exec.Command("sh", "-c", p.cmdline)
	cmd.Stdout, cmd.Stderr = p.term, p.errOut
	cmd.Env = os.Environ()
	// less: quit when it all fits, keep colour, leave the screen as is.
	if _, ok := os.LookupEnv("LESS"); !ok {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	if _, ok := os.LookupEnv("LV"); !ok {
		cmd.Env = append(cmd.Env, "LV=-c")
	}
	in, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		p.err = err
		fmt.Fprintf(p.errOut, "warning: start the pager %q: %v; printing without it\n", p.cmdline, err)
		return
	}
	p.cmd, p.in = cmd, in
}

// wait ends the pager's input and waits for the reader to quit it.
func (p *pagerOut) wait() error {
	if p.cmd == nil {
		return nil
	}
	p.in.Close()
	err := p.cmd.Wait()
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*exec.ExitError](err); ok {
		// A pager that quits normally exits 0 (less does, on q, however
		// early); one killed by a signal was quit too. Any other status
		// means it failed, most likely before showing anything: the
		// output is gone, so say why, as a warning (the command worked).
		if e.ExitCode() > 0 {
			fmt.Fprintf(p.errOut, "warning: the pager %q failed (%v); set BOXKITE_PAGER=cat to print without one\n", p.cmdline, e)
		}
		return nil
	}
	if !p.closed {
		return fmt.Errorf("pager %q: %w", p.cmdline, err)
	}
	return nil
}

// pageMarked wraps the RunE of every command under cmd that pageable
// marked, so its output goes through the pager.
func pageMarked(app *App, cmd *cobra.Command) {
	if run := cmd.RunE; run != nil && cmd.Annotations[annotationPager] != "" {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			return runPaged(app, func() error { return run(c, args) })
		}
	}
	for _, sub := range cmd.Commands() {
		pageMarked(app, sub)
	}
}
