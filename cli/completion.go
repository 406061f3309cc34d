package cli

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
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
		Use: "completion bash|zsh|fish|powershell",
		Example: `  boxkite completion bash > ~/.local/share/bash-completion/completions/boxkite
  boxkite completion zsh > "${fpath[1]}/_boxkite"
  boxkite completion fish > ~/.config/fish/completions/boxkite.fish`,
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

// completeFrom completes ids fetched with list, each described by desc;
// with suffix, every candidate ends with it and no space follows (--volume
// ID=/path).
func completeFrom[T any](app *App, list func(*client.Client, context.Context) ([]T, error), id, desc func(T) string, suffix string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		directive := cobra.ShellCompDirectiveNoFileComp
		if suffix != "" {
			directive |= cobra.ShellCompDirectiveNoSpace
		}
		c, err := app.Client()
		if err != nil {
			return nil, directive
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
		defer cancel()
		items, err := list(c, ctx)
		if err != nil {
			return nil, directive
		}
		out := make([]cobra.Completion, 0, len(items))
		for _, it := range items {
			out = append(out, cobra.CompletionWithDesc(id(it)+suffix, desc(it)))
		}
		return out, directive
	}
}

func completeImages(app *App) cobra.CompletionFunc {
	return completeFrom(app, (*client.Client).ListImages, func(i api.Image) string { return i.ID },
		func(i api.Image) string { return strings.TrimSpace(i.Label + " " + i.Status) }, "")
}

func completeVolumes(app *App, suffix string) cobra.CompletionFunc {
	return completeFrom(app, (*client.Client).ListVolumes, func(v api.Volume) string { return v.ID },
		func(v api.Volume) string { return v.Label }, suffix)
}

func completeMCPConnections(app *App, byLabel bool) cobra.CompletionFunc {
	id := func(m api.MCPConnection) string { return m.ID }
	if byLabel {
		id = func(m api.MCPConnection) string { return m.Label }
	}
	return completeFrom(app, (*client.Client).ListMCPConnections, id, func(m api.MCPConnection) string { return m.Host }, "")
}

// withArgs sets cmd's positional-argument completion.
func withArgs(cmd *cobra.Command, f cobra.CompletionFunc) *cobra.Command {
	cmd.ValidArgsFunction = f
	return cmd
}
