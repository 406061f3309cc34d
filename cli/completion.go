package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// completionShell is a shell, the file its script is installed as, and its generator.
type completionShell struct {
	name, file string
	gen        func(root *cobra.Command, w io.Writer) error
}

// completionShells lists the shells we generate for; docs.go writes them all.
func completionShells() []completionShell {
	return []completionShell{
		{"bash", "boxkite.bash", func(root *cobra.Command, w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
		{"zsh", "_boxkite", func(root *cobra.Command, w io.Writer) error { return root.GenZshCompletion(w) }},
		{"fish", "boxkite.fish", func(root *cobra.Command, w io.Writer) error { return root.GenFishCompletion(w, true) }},
		{"powershell", "boxkite.ps1", func(root *cobra.Command, w io.Writer) error { return root.GenPowerShellCompletionWithDesc(w) }},
	}
}

func newCompletionCmd() *cobra.Command {
	var shells []string
	for _, s := range completionShells() {
		shells = append(shells, s.name)
	}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print the completion script for a shell. Packages install these already;
to load them by hand:

  bash:        source <(boxkite completion bash)
  zsh:         boxkite completion zsh > "${fpath[1]}/_boxkite"
  fish:        boxkite completion fish | source
  powershell:  boxkite completion powershell | Out-String | Invoke-Expression`,
		GroupID:   groupSettings,
		ValidArgs: shells,
		Args:      usageArgs(cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs)),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range completionShells() {
				if s.name == args[0] {
					return s.gen(cmd.Root(), cmd.OutOrStdout())
				}
			}
			return nil // unreachable: OnlyValidArgs
		},
	}
}
