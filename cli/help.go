package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newHelpCmd is `boxkite help [COMMAND|TOPIC]`. It is cobra's help command
// except for a name that is neither a command nor a help topic: cobra
// prints the root's help and exits 0 for it (the root takes its unknown
// subcommands as arguments), so `boxkite help errors` looked like an
// answer. Here it is a usage error that names what was asked.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long: `Help provides help for any command in the application.
Simply type boxkite help [path to command] for full details.`,
		GroupID:           groupSettings,
		ValidArgsFunction: completeHelpTopics,
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err == nil && len(rest) > 0 && cmd.HasSubCommands() {
				err = cmd.ValidateArgs(rest)
			}
			if err != nil {
				return unknownHelpTopic(cmd, rest, args)
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// unknownHelpTopic is the usage error of `boxkite help NAME` for a NAME
// under cmd that is neither a command nor a help topic.
func unknownHelpTopic(cmd *cobra.Command, rest, args []string) error {
	name := strings.Join(args, " ")
	if cmd == nil || len(rest) == 0 {
		return usageErrorf("'boxkite help' lists the commands and help topics", "no command or help topic %q", name)
	}
	hint := fmt.Sprintf("'%s --help' lists its commands", cmd.CommandPath())
	if !cmd.HasParent() {
		hint = "'boxkite help' lists the commands and help topics; README.md and docs/ cover the rest"
	}
	if s := cmd.SuggestionsFor(rest[0]); len(s) > 0 {
		hint = "did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageErrorf(hint, "no command or help topic %q", name)
}

// completeHelpTopics completes `boxkite help` with the commands and help
// topics under the words given so far.
func completeHelpTopics(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	cmd, _, err := c.Root().Find(args)
	if err != nil || cmd == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, sub := range cmd.Commands() {
		if (sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand()) && strings.HasPrefix(sub.Name(), toComplete) {
			out = append(out, sub.Name()+"\t"+sub.Short)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
