package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/boxkite/boxkite/client"
)

// confirmation is --yes/-y on a destructive command, as in gh: on a
// terminal the command asks before it destroys anything; elsewhere
// (a script, a pipe, CI) it refuses unless --yes says the caller means
// it, so a destructive command never runs on a guess.
//
// Register it with register; call refuseUnattended first thing in RunE
// (before any request: a script learns at once that it needs --yes), and
// ask once the command knows exactly what it will destroy.
type confirmation struct {
	yes bool
	cmd *cobra.Command
}

// annotationDestructive marks commands that confirm, for tests of the tree.
const annotationDestructive = "boxkite:destructive"

func (c *confirmation) register(cmd *cobra.Command) {
	c.cmd = cmd
	cmd.Flags().BoolVarP(&c.yes, "yes", "y", false, "do not ask for confirmation (needed when stdin is not a terminal)")
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationDestructive] = "true"
}

// client is the client of the selected context, once refuseUnattended
// let the command go on.
func (c *confirmation) client(app *App, args []string) (*client.Client, error) {
	if err := c.refuseUnattended(app, args); err != nil {
		return nil, err
	}
	return app.Client()
}

// refuseUnattended fails with a usage error (exit 2) when nobody can be
// asked and --yes was not given. args are the command's arguments, for
// the hint's example.
func (c *confirmation) refuseUnattended(app *App, args []string) error {
	if c.yes || app.IO.InTTY {
		return nil
	}
	words := append([]string{c.cmd.CommandPath()}, quoteArgs(args)...)
	example := strings.Join(append(words, givenFlags(c.cmd)...), " ") + " --yes"
	return usageErrorf("pass --yes to confirm: "+example,
		"%s needs confirmation, and stdin is not a terminal to ask on", c.cmd.CommandPath())
}

// ask asks question (a yes/no question without the "[y/N]") on the
// terminal and returns nil only for a yes. With --yes it asks nothing.
func (c *confirmation) ask(app *App, question string) error {
	if c.yes {
		return nil
	}
	if err := c.refuseUnattended(app, nil); err != nil {
		return err
	}
	fmt.Fprintf(app.IO.ErrOut, "%s [y/N] ", question)
	// Ctrl-C on the terminal is a SIGINT that main turns into a cancelled
	// context: the answer is read aside, so that the prompt ends at once
	// instead of waiting for a line (the reader is left blocked; the
	// command is over).
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(app.IO.In).ReadString('\n')
		answer <- line
	}()
	var line string
	select {
	case line = <-answer:
	case <-c.context().Done():
		fmt.Fprintln(app.IO.ErrOut)
		return c.context().Err()
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	if line == "" || !strings.HasSuffix(line, "\n") {
		fmt.Fprintln(app.IO.ErrOut) // end the prompt's line (EOF, Ctrl-D)
	}
	return &exitStatus{code: exitError, msg: "cancelled: nothing was changed"}
}

// context is the command's context (cancelled by Ctrl-C).
func (c *confirmation) context() context.Context {
	if ctx := c.cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// givenFlags are the flags given to cmd but --yes, as words for a shell,
// so that the command in a hint does what was asked ("session rm --all").
// The API key is left out: a hint is no place for it.
func givenFlags(cmd *cobra.Command) []string {
	var words []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "yes", "api-key":
			return
		}
		if f.Value.Type() == "bool" {
			if f.Value.String() == "true" {
				words = append(words, "--"+f.Name)
			} else {
				words = append(words, "--"+f.Name+"=false")
			}
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+f.Name, quoteArgs([]string{v})[0])
			}
			return
		}
		words = append(words, "--"+f.Name, quoteArgs([]string{f.Value.String()})[0])
	})
	return words
}

// quoteArgs quotes the arguments that a shell would split or expand.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			out[i] = shellQuote(a)
		}
	}
	return out
}

// itemList names up to a few things for a question: "3f2a", "3f2a and
// 77aa", "3f2a, 77aa and 4 more".
func itemList(names []string) string {
	const shown = 3
	switch n := len(names); {
	case n == 0:
		return ""
	case n == 1:
		return names[0]
	case n <= shown:
		return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	default:
		return strings.Join(names[:shown-1], ", ") + fmt.Sprintf(", %s and %d more", names[shown-1], n-shown)
	}
}
