package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// TestHelpExamplesParse: every boxkite command line in a command's
// --help examples names a command that exists and passes its flag and
// argument checks, as a user who copies it would find; an example that
// drifted from its command (a renamed flag, a wrong argument count) fails
// here instead of in the user's terminal.
func TestHelpExamplesParse(t *testing.T) {
	t.Parallel()
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, "test"))
	n := 0
	walkCommands(root, func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			for _, args := range exampleCalls(t, line) {
				n++
				if err := parseExample(args); err != nil {
					t.Errorf("%s: example %q: %v", c.CommandPath(), strings.TrimSpace(line), err)
				}
			}
		}
	})
	if n < 100 {
		t.Errorf("checked %d example command lines, want the ~140 the help has", n)
	}
	for _, bad := range [][]string{{"session", "ls", "--nope"}, {"session", "nosuch"}, {"session", "get"}, {"exec", "-s"}} {
		if parseExample(bad) == nil {
			t.Errorf("parseExample(%q) passed, want an error", bad)
		}
	}
}

// TestLeafCommandsHaveExamples: every command that does something (not
// a group of subcommands, not hidden) shows at least one example in its
// --help, as gh's do; TestHelpExamplesParse checks that they parse.
func TestLeafCommandsHaveExamples(t *testing.T) {
	t.Parallel()
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, "test"))
	walkCommands(root, func(c *cobra.Command) {
		if c.Runnable() && !c.Hidden && !c.HasAvailableSubCommands() && strings.TrimSpace(c.Example) == "" && c.Name() != "help" {
			t.Errorf("%s has no examples in its --help", c.CommandPath())
		}
	})
}

func walkCommands(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, f)
	}
}

// exampleCalls are the arguments of the boxkite commands of one example
// line, read as a shell reads them (pipes and $(…) included; a comment
// is dropped, variables expand to nothing).
func exampleCalls(t *testing.T, line string) [][]string {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		t.Errorf("example %q is not shell: %v", line, err)
		return nil
	}
	var calls [][]string
	syntax.Walk(f, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || call.Args[0].Lit() != "boxkite" {
			return true
		}
		var args []string
		for _, w := range call.Args[1:] {
			s, err := expand.Literal(&expand.Config{}, w)
			if err != nil {
				t.Errorf("example %q: expand %v: %v", line, w, err)
			}
			args = append(args, s)
		}
		calls = append(calls, args)
		return true
	})
	return calls
}

// parseExample checks args as Execute would before running the command:
// the command found, its flags parsed, its arguments and flag rules met.
func parseExample(args []string) error {
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, "test"))
	cmd, rest, err := root.Find(joinJSONFields(root, args))
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return err
	}
	return cmd.ValidateFlagGroups()
}

// TestFlagPlaceholdersNameValues: pflag shows a flag's value as the first
// `backquoted` word of its usage (--execs N, --name name). A backquoted
// word that is not what the user types there makes the help lie: bench
// showed "--execs true", an int flag, from "execs of `true`".
func TestFlagPlaceholdersNameValues(t *testing.T) {
	t.Parallel()
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, "test"))
	walkCommands(root, func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if f.Value.Type() != "bool" && (name == "true" || name == "false") {
				t.Errorf("%s --%s shows its value as %q", c.CommandPath(), f.Name, name)
			}
		})
	})
}
