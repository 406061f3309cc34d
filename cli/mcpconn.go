package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

func newMCPConnectionsCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "mcp-connections",
		Aliases: []string{"mcp-connection"},
		Short:   "Create, list and remove MCP connections (egress grants)",
		Long: `An MCP connection names a catalog host (github, slack, notion, linear, or
what the server's catalog holds). A sandbox created with
--mcp-connection LABEL may reach that host on port 443 through the
server's egress proxy; every other destination stays unreachable.
Commands take a connection's id, a unique prefix of it, or its label.`,
		GroupID: groupSandboxes,
	})
	ids := completeMCPConnections(app, false)
	cmd.AddCommand(newMCPCreateCmd(app), newMCPLsCmd(app),
		withArgs(withExample(newDetailCmd(app, "MCP connection", "Show one MCP connection"+refsNote, byRef(mcpConnectionID, (*client.Client).GetMCPConnection), writeMCPConnectionDetail),
			"  boxkite mcp-connections get gh\n  boxkite mcp-connections get gh --jq .host"), ids),
		withArgs(withExample(newRmCmd(app, "MCP connection", "Remove an MCP connection (running sandboxes keep their grant)", false, mcpConnectionID, (*client.Client).DeleteMCPConnection),
			"  boxkite mcp-connections rm gh\n  boxkite mcp-connections rm gh --yes"), ids))
	return cmd
}

// writeMCPConnectionDetail is `mcp-connections get`'s text view of m: the
// host its sandboxes may reach on port 443.
func writeMCPConnectionDetail(w io.Writer, m *api.MCPConnection, now time.Time) error {
	tw := newTable(w)
	tw.Detail("id", m.ID)
	tw.Detail("label", m.Label)
	tw.Detail("catalog", m.CatalogID)
	tw.Detail("host", m.Host)
	tw.Detail("created", stamp(m.CreatedAt, now, " ago"))
	return tw.Flush()
}

func newMCPCreateCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:     "create LABEL CATALOG_ID",
		Short:   "Create a connection and print its id",
		Example: "  boxkite mcp-connections create gh github\n  boxkite session create --mcp-connection gh",
		Args:    usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLabel("LABEL", args[0]); err != nil {
				return err
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			m, err := c.CreateMCPConnection(cmd.Context(), api.CreateMCPConnectionRequest{Label: args[0], CatalogID: args[1]})
			if err != nil {
				return fmt.Errorf("create MCP connection: %w", err)
			}
			if asJSON {
				return out.write(app.IO, m)
			}
			fmt.Fprintln(app.IO.Out, m.ID)
			return nil
		},
	}
	out.register(cmd, api.MCPConnection{})
	return cmd
}

func newMCPLsCmd(app *App) *cobra.Command {
	return newListCmd(app, listing[api.MCPConnection]{
		short: "List the account's MCP connections", noun: "mcp connections",
		example: "  boxkite mcp-connections ls\n  boxkite mcp-connections ls --json label,catalog_id",
		header:  "ID\tLABEL\tCATALOG\tHOST",
		empty:   "no MCP connections; create one with 'boxkite mcp-connections create LABEL CATALOG_ID'",
		fetch:   (*client.Client).ListMCPConnections,
		row: func(m api.MCPConnection, _ time.Time) []string {
			return []string{m.ID, m.Label, m.CatalogID, m.Host}
		},
	})
}
