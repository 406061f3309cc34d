package cli

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
)

func newPreviewCmd(app *App) *cobra.Command {
	var (
		ref    string
		ttl    time.Duration
		open   bool
		revoke bool
		list   bool
		out    outputFlags
	)
	cmd := &cobra.Command{
		Use:     "preview PORT | --list",
		Short:   "Print a URL that shows a web app listening on PORT inside the sandbox",
		GroupID: groupSandboxes,
		Long: `Print a preview URL of PORT inside the sandbox: a browser (or curl) that opens
it reaches the app listening there, WebSockets included. The URL carries a
token, valid for --ttl, which the first visit exchanges for a cookie; anyone
with the URL can open it until it expires or is revoked (--revoke).
--list shows the sandbox's live previews (without their tokens).

The URL is host-based, http://PORT-ID.localhost:… in local mode, so the
app's absolute paths work. path_url in --json is the path form, for clients
that cannot resolve *.localhost. See docs/previews.md.`,
		Example: "  boxkite exec -- sh -c 'python3 -m http.server 8000 &'\n" +
			"  boxkite preview 8000 --open\n" +
			"  boxkite preview --list\n" +
			"  boxkite preview 8000 --revoke",
		Args: usageArgs(cobra.RangeArgs(0, 1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				if len(args) > 0 || revoke || open {
					return usageErrorf("'boxkite preview --list' lists every port's previews", "--list takes no PORT, --revoke or --open")
				}
				return listPreviews(cmd, app, ref, &out)
			}
			if len(args) == 0 {
				return usageErrorf("give the port the app listens on inside the sandbox, e.g. 'boxkite preview 8080', or --list", "PORT is missing")
			}
			port, err := strconv.Atoi(args[0])
			if err != nil || port < 1 || port > 65535 {
				return usageErrorf("give the port the app listens on inside the sandbox, e.g. 8080", "PORT must be 1 to 65535, not %q", args[0])
			}
			if revoke && cmd.Flags().Changed("ttl") {
				return usageErrorf("--revoke ends every preview of PORT; leave out --ttl", "--revoke takes no --ttl")
			}
			if d := ttl; d < api.MinPreviewTTL*time.Second || d > api.MaxPreviewTTL*time.Second {
				return usageErrorf("give --ttl from 30s to 24h, e.g. --ttl 2h", "--ttl %s is out of range", compactDuration(d))
			}
			asJSON, c, sb, err := jsonTarget(cmd, app, &out, ref)
			if err != nil {
				return err
			}
			if revoke {
				if err := c.RevokePreviews(cmd.Context(), sb.ID, port); err != nil {
					err = fmt.Errorf("revoke previews: %w", err)
					if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeNotFound {
						// The API's hint names its route; the CLI has a command for it.
						return &hintError{err: err, hint: fmt.Sprintf("list the live ones with 'boxkite preview --list -s %s'", sb.ID)}
					}
					return err
				}
				fmt.Fprintf(app.IO.ErrOut, "revoked the previews of port %d\n", port)
				return nil
			}
			p, err := c.CreatePreview(cmd.Context(), sb.ID, port, api.CreatePreviewRequest{TTLSeconds: int(ttl / time.Second)})
			if err != nil {
				return fmt.Errorf("create preview: %w", err)
			}
			if asJSON {
				if err := out.write(app.IO, p); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(app.IO.Out, p.URL)
				fmt.Fprintf(app.IO.ErrOut, "valid until %s; revoke with 'boxkite preview %d --revoke -s %s'\n",
					p.ExpiresAt.Local().Format("15:04:05"), port, sb.ID)
			}
			if open {
				if err := openBrowser(p.URL); err != nil {
					return &hintError{err: fmt.Errorf("open a browser: %w", err), hint: "open the URL above yourself, or set $BROWSER"}
				}
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().Var(newDurationValue(&ttl, time.Hour, time.Second), "ttl", "how long the URL works, 30s to 24h")
	cmd.Flags().BoolVar(&open, "open", false, "open the URL in a browser too ($BROWSER, else xdg-open or open)")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "revoke every preview of PORT instead")
	cmd.Flags().BoolVar(&list, "list", false, "list the sandbox's live previews instead")
	out.register(cmd, api.Preview{})
	return cmd
}

// listPreviews prints the sandbox's live previews.
func listPreviews(cmd *cobra.Command, app *App, ref string, out *outputFlags) error {
	asJSON, c, sb, err := jsonTarget(cmd, app, out, ref)
	if err != nil {
		return err
	}
	ps, err := c.ListPreviews(cmd.Context(), sb.ID)
	if err != nil {
		return fmt.Errorf("list previews: %w", err)
	}
	if asJSON {
		return out.write(app.IO, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(app.IO.ErrOut, "no live previews; create one with 'boxkite preview PORT'")
		return nil
	}
	return writeRows(app.IO.Out, app.IO.Color, "PORT\tEXPIRES IN\tCREATED\tID", ps, func(p api.Preview, now time.Time) []string {
		return []string{strconv.Itoa(p.Port), tui.ShortDuration(p.ExpiresAt.Sub(now)), p.CreatedAt.Local().Format("15:04:05"), p.ID}
	}, time.Now())
}
