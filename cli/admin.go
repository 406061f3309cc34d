package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

func newAdminCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:   "admin",
		Short: "The operator's view across accounts: metrics, audit log, admin access log",
		Long: `Commands for the server's operator: accounts the server's configuration
names operators (boxkite-server --operator EMAIL; in local mode the local
account is one). Anyone else gets 403. Every call is itself written to the
admin access log (boxkite admin access-log). docs/admin.md.`,
		GroupID: groupSettings,
	})
	cmd.AddCommand(newAdminMetricsCmd(app), newAdminAuditLogCmd(app), newAdminAccessLogCmd(app))
	return cmd
}

func newAdminMetricsCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use: "metrics",
		Example: `  boxkite admin metrics
  boxkite admin metrics --json`,
		Short: "Every account's concurrent sandboxes and sandbox hours this month",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			m, err := c.AdminMetrics(cmd.Context())
			if err != nil {
				return fmt.Errorf("admin metrics: %w", err)
			}
			if asJSON {
				return out.write(app.IO, m)
			}
			limit := "none"
			if m.GlobalConcurrentSandboxesLimit > 0 {
				limit = strconv.Itoa(m.GlobalConcurrentSandboxesLimit)
			}
			fmt.Fprintf(app.IO.Out, "accounts: %d\nconcurrent sandboxes: %d (limit %s)\nsandbox hours this month: %.2f\n\n",
				m.TotalAccounts, m.GlobalConcurrentSandboxes, limit, m.TotalMonthlySandboxHoursUsed)
			return writeRows(app.IO.Out, app.IO.Color, "ACCOUNT\tEMAIL\tCONCURRENT\tHOURS", m.Accounts, func(a api.AdminAccountMetrics, _ time.Time) []string {
				return []string{a.AccountID, a.Email, strconv.Itoa(a.ConcurrentSandboxes), strconv.FormatFloat(a.MonthlySandboxHoursUsed, 'f', 2, 64)}
			}, time.Now())
		},
	}
	out.register(cmd, api.AdminMetrics{})
	return cmd
}

// pageFlags are --limit and --offset of an admin listing.
type pageFlags struct{ limit, offset int }

func (p *pageFlags) register(cmd *cobra.Command, noun string) {
	cmd.Flags().IntVar(&p.limit, "limit", 100, "how many "+noun+" to show (1 to 500)")
	cmd.Flags().IntVar(&p.offset, "offset", 0, "how many of the newest to skip")
}

// jsonClient is jsonClient once the page is in range.
func (p *pageFlags) jsonClient(cmd *cobra.Command, app *App, out *outputFlags) (bool, *client.Client, error) {
	if err := p.check(); err != nil {
		return false, nil, err
	}
	return jsonClient(cmd, app, out)
}

func (p *pageFlags) check() error {
	if p.limit < 1 || p.limit > 500 || p.offset < 0 {
		return usageErrorf("pass --limit from 1 to 500 and --offset of 0 or more", "--limit %d --offset %d is out of range", p.limit, p.offset)
	}
	return nil
}

func newAdminAuditLogCmd(app *App) *cobra.Command {
	var (
		out     outputFlags
		page    pageFlags
		account string
	)
	cmd := &cobra.Command{
		Use:     "audit-log",
		Short:   "The audit log across accounts, newest first",
		Example: "  boxkite admin audit-log --limit 20\n  boxkite admin audit-log --account ACCOUNT_ID --json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, err := page.jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			es, err := c.AdminAuditLog(cmd.Context(), account, page.limit, page.offset)
			if err != nil {
				return fmt.Errorf("admin audit log: %w", err)
			}
			if asJSON {
				return out.write(app.IO, es)
			}
			if len(es) == 0 {
				fmt.Fprintln(app.IO.ErrOut, "no audit entries")
				return nil
			}
			return writeRows(app.IO.Out, app.IO.Color, "TIME\tACCOUNT\tSANDBOX\tOPERATION", es, func(e api.LogEntry, _ time.Time) []string {
				return []string{e.StartedAt.Format(time.RFC3339), e.AccountID, e.SessionID, e.Operation}
			}, time.Now())
		},
	}
	cmd.Flags().StringVar(&account, "account", "", "only this account's entries (`ID`)")
	page.register(cmd, "entries")
	out.register(cmd, []api.LogEntry{})
	return cmd
}

func newAdminAccessLogCmd(app *App) *cobra.Command {
	var (
		out  outputFlags
		page pageFlags
	)
	cmd := &cobra.Command{
		Use: "access-log",
		Example: `  boxkite admin access-log --limit 20
  boxkite admin access-log --json --jq '.[] | select(.status >= 400) | .path'`,
		Short: "The admin access log: every call to /v1/admin/*, allowed or refused, newest first",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, err := page.jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			as, err := c.AdminAccessLog(cmd.Context(), page.limit, page.offset)
			if err != nil {
				return fmt.Errorf("admin access log: %w", err)
			}
			if asJSON {
				return out.write(app.IO, as)
			}
			return writeRows(app.IO.Out, app.IO.Color, "TIME\tEMAIL\tREQUEST\tSTATUS", as, func(a api.AdminAccess, _ time.Time) []string {
				req := a.Method + " " + a.Path
				if a.Query != "" {
					req += "?" + a.Query
				}
				return []string{a.At.Format(time.RFC3339), a.Email, req, strconv.Itoa(a.Status)}
			}, time.Now())
		},
	}
	page.register(cmd, "calls")
	out.register(cmd, []api.AdminAccess{})
	return cmd
}
