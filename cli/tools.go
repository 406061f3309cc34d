package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/boxkite/boxkite/tools"
	"github.com/spf13/cobra"
)

// toolSets are the groups of agent tools `tools export --tools` selects:
// the sets, and each opt-in tool by its name.
func toolSets() map[string]func() []tools.Tool {
	sets := map[string]func() []tools.Tool{
		"default": tools.Default,
		"git":     tools.Git,
		"lsp":     tools.LSP,
	}
	for _, t := range tools.Optional() {
		sets[t.Name] = func() []tools.Tool { return []tools.Tool{t} }
	}
	return sets
}

func newToolsCmd() *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "tools",
		Short:   "Export the agent tools' schemas for an LLM API",
		GroupID: groupSettings,
	})
	cmd.AddCommand(newToolsExportCmd())
	return cmd
}

func newToolsExportCmd() *cobra.Command {
	var (
		format string
		sets   []string
	)
	cmd := &cobra.Command{
		Use:   "export --format openai|anthropic|gemini|mcp [--tools default,git,lsp]",
		Short: "Print the agent tools' schemas in an LLM API's format",
		Long: `Print the JSON schemas of boxkite's agent tools (bash, file editing, search,
processes, …) as the tools field of an LLM API: OpenAI Chat Completions,
Anthropic Messages, Gemini function declarations, or an MCP tools/list.
--tools picks the sets: default (the 15 everyday tools), git and lsp, and
the opt-in tools by name: http_request (requests with secrets, made by the
server; see 'boxkite secrets'), pty_exec, node_interpreter, run_tests and
browser_navigate, browser_exec, browser_screenshot, browser_close.
all is the three sets, without opt-in tools.`,
		Example: `  boxkite tools export --format anthropic > tools.json
  boxkite tools export --format openai --tools default,git
  boxkite tools export --format mcp --tools default,http_request`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format == "" {
				return usageErrorf(helpHint(cmd), "give the --format: %s", strings.Join(tools.Formats(), ", "))
			}
			if !slices.Contains(tools.Formats(), format) {
				return usageErrorf(helpHint(cmd), "--format must be one of %s", strings.Join(tools.Formats(), ", "))
			}
			ts, err := selectTools(sets)
			if err != nil {
				return usageErrorf(helpHint(cmd), "%v", err)
			}
			b, err := tools.Export(ts, format)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "`format`: "+strings.Join(tools.Formats(), ", "))
	cmd.Flags().StringSliceVar(&sets, "tools", []string{"default"}, "tool `sets` to export: default, git, lsp, all, or an opt-in tool's name ("+strings.Join(tools.OptionalNames(), ", ")+")")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(tools.Formats(), cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("tools", cobra.FixedCompletions(append([]string{"default", "git", "lsp", "all"}, tools.OptionalNames()...), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// selectTools gathers the named sets, each once, in the order given.
func selectTools(names []string) ([]tools.Tool, error) {
	sets := toolSets()
	var out []tools.Tool
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "all" {
			for _, all := range []string{"default", "git", "lsp"} {
				if !seen[all] {
					seen[all] = true
					out = append(out, sets[all]()...)
				}
			}
			continue
		}
		get, ok := sets[n]
		if !ok {
			return nil, fmt.Errorf("unknown tool set %q (want default, git, lsp, all or an opt-in tool: %s)", n, strings.Join(tools.OptionalNames(), ", "))
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, get()...)
		}
	}
	return out, nil
}
