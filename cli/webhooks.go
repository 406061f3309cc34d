package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

func newWebhooksCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "webhooks",
		Aliases: []string{"webhook"},
		Short:   "Subscribe URLs to sandbox and audit events, and see their deliveries",
		Long: `A webhook subscription sends the account's events (sandbox.created,
sandbox.destroyed, sandbox.paused, sandbox.resumed, sandbox.lost,
audit_log.entry) to a URL as signed JSON: each request carries
X-Boxkite-Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<body>"> under the subscription's secret, which 'add' prints once.
Deliveries are retried with backoff for about an hour (docs/webhooks.md).
Commands take a subscription's id, a unique prefix of it, or its URL.`,
		GroupID: groupSandboxes,
	})
	cmd.AddCommand(
		newWebhooksAddCmd(app),
		newWebhooksLsCmd(app),
		withArgs(withExample(newDetailCmd(app, "webhook", "Show one webhook subscription, never its secret (an id prefix or the URL is enough)", byRef(webhookID, getWebhook), writeWebhookDetail, "secret"),
			"  hook=$(boxkite webhooks ls --jq '.[0].id')\n  boxkite webhooks get $hook --jq .created_by"), completeWebhooks(app)),
		withArgs(withExample(newRmCmd(app, "webhook", "Remove a webhook subscription and its pending deliveries", false, webhookID, (*client.Client).DeleteWebhook),
			"  hook=$(boxkite webhooks ls --jq '.[0].id')\n  boxkite webhooks rm $hook --yes"), completeWebhooks(app)),
		newWebhooksDeliveriesCmd(app),
		newWebhooksTestCmd(app),
		newWebhooksRedeliverCmd(app),
	)
	return cmd
}

// getWebhook is GET /v1/webhooks/{id} without the signing secret, should
// a server ever send it: 'add' prints it once, and no get shows it, --json
// included.
func getWebhook(c *client.Client, ctx context.Context, id string) (*api.Webhook, error) {
	wh, err := c.GetWebhook(ctx, id)
	if wh != nil {
		wh.Secret = ""
	}
	return wh, err
}

// writeWebhookDetail is `webhooks get`'s text view of wh (never its
// signing secret: getWebhook drops it).
func writeWebhookDetail(w io.Writer, wh *api.Webhook, now time.Time) error {
	tw := newTable(w)
	tw.Detail("id", wh.ID)
	tw.Detail("url", wh.URL)
	tw.Detail("events", strings.Join(wh.EventTypes, " "))
	tw.Detail("format", cmp.Or(wh.PayloadFormat, api.PayloadBoxkiteV1))
	active := "yes"
	if !wh.IsActive {
		active = "no: no event is sent to it"
	}
	tw.Detail("active", active)
	tw.Detail("description", wh.Description)
	tw.Detail("created", stamp(wh.CreatedAt, now, " ago"))
	tw.Detail("created by", wh.CreatedBy) // an organization member's account id
	last := "never"
	if wh.LastTriggeredAt != nil {
		last = stamp(*wh.LastTriggeredAt, now, " ago")
	}
	tw.Detail("last sent", last)
	return tw.Flush()
}

func newWebhooksAddCmd(app *App) *cobra.Command {
	var (
		out         outputFlags
		events      []string
		description string
		format      string
		hecToken    string
	)
	cmd := &cobra.Command{
		Use:   "add URL",
		Short: "Subscribe a URL to events and print its id and signing secret",
		Example: "  boxkite webhooks add https://hooks.example.com/boxkite --event sandbox.created --event sandbox.destroyed\n" +
			"  boxkite webhooks add https://splunk.example.com:8088/services/collector --event audit_log.entry --format splunk_hec --hec-token TOKEN",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(events) == 0 {
				return usageErrorf("pass --event TYPE, once per event type to send", "a webhook needs at least one --event")
			}
			if hecToken != "" && format != api.PayloadSplunkHEC {
				return usageErrorf("add --format splunk_hec, or drop --hec-token", "--hec-token is only sent with --format splunk_hec")
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			w, err := c.CreateWebhook(cmd.Context(), api.CreateWebhookRequest{
				URL: args[0], EventTypes: events, Description: description, PayloadFormat: format, HECToken: hecToken,
			})
			if err != nil {
				return fmt.Errorf("add webhook: %w", err)
			}
			if asJSON {
				return out.write(app.IO, w)
			}
			fmt.Fprintf(app.IO.Out, "%s\nsecret: %s (shown once: keep it to verify signatures)\n", w.ID, w.Secret)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&events, "event", nil, "`TYPE` of event to send (repeatable, at least one): sandbox.created, sandbox.destroyed, sandbox.paused, sandbox.resumed, sandbox.lost, audit_log.entry")
	cmd.Flags().StringVar(&description, "description", "", "free `TEXT` describing the subscription")
	cmd.Flags().StringVar(&format, "format", "", "payload `FORMAT`: boxkite_v1 (default) or splunk_hec")
	cmd.Flags().StringVar(&hecToken, "hec-token", "", "Splunk HTTP Event Collector `TOKEN` (with --format splunk_hec)")
	_ = cmd.RegisterFlagCompletionFunc("event", cobra.FixedCompletions([]string{
		api.EventSandboxCreated, api.EventSandboxDestroyed, api.EventSandboxPaused, api.EventSandboxResumed, api.EventSandboxLost, api.EventAuditLogEntry,
	}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{api.PayloadBoxkiteV1, api.PayloadSplunkHEC}, cobra.ShellCompDirectiveNoFileComp))
	out.register(cmd, api.Webhook{})
	return cmd
}

func newWebhooksLsCmd(app *App) *cobra.Command {
	return newListCmd(app, listing[api.Webhook]{
		short: "List the account's webhook subscriptions", noun: "webhooks",
		example: "  boxkite webhooks ls\n  boxkite webhooks ls --json id,url,event_types",
		header:  "ID\tURL\tEVENTS\tLAST SENT\tCREATED BY",
		empty:   "no webhooks; add one with 'boxkite webhooks add URL --event TYPE'",
		fetch:   (*client.Client).ListWebhooks,
		page:    (*client.Client).ListWebhookPage,
		omit:    []string{"secret"}, // only add's answer has it
		row: func(w api.Webhook, _ time.Time) []string {
			last := "never"
			if w.LastTriggeredAt != nil {
				last = w.LastTriggeredAt.Format(time.RFC3339)
			}
			by := w.CreatedBy // an organization's member; "" for a personal account's
			if by == "" {
				by = "-"
			}
			return []string{w.ID, w.URL, strings.Join(w.EventTypes, ","), last, by}
		},
	})
}

func newWebhooksDeliveriesCmd(app *App) *cobra.Command {
	var (
		out           outputFlags
		limit, offset int
	)
	cmd := &cobra.Command{
		Use: "deliveries ID",
		Example: `  hook=$(boxkite webhooks ls --jq '.[0].id')
  boxkite webhooks deliveries $hook
  boxkite webhooks deliveries $hook --limit 100 --json`,
		Short: "List a subscription's deliveries, newest first",
		Long: `List a subscription's deliveries, newest first: the newest 20, or --limit N
(at most 100) after the newest --offset. When more follow, the table
says on stderr how to see them; --json prints the deliveries alone.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > 100 || offset < 0 {
				return usageErrorf("pass --limit 1 to 100, and --offset 0 or more", "--limit %d --offset %d is out of range", limit, offset)
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			id, err := webhookID(cmd.Context(), c, args[0])
			if err != nil {
				return fmt.Errorf("list webhook deliveries: %w", err)
			}
			p, err := c.WebhookDeliveriesAt(cmd.Context(), id, limit, offset)
			if err != nil {
				return fmt.Errorf("list webhook deliveries: %w", err)
			}
			ds := p.Items
			if asJSON {
				if ds == nil {
					ds = []api.WebhookDelivery{}
				}
				return out.write(app.IO, ds)
			}
			if len(ds) == 0 {
				fmt.Fprintln(app.IO.ErrOut, "no deliveries yet; queue one with 'boxkite webhooks test ID'")
				return nil
			}
			if err := writeDeliveries(app, ds); err != nil {
				return err
			}
			if p.Next != "" {
				noteAfterOutput(app, moreDeliveriesNote(id, len(ds), offset))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "how many deliveries to show (at most 100)")
	cmd.Flags().IntVar(&offset, "offset", 0, "how many of the newest to skip")
	out.register(cmd, []api.WebhookDelivery{})
	cmd.ValidArgsFunction = completeWebhooks(app)
	return cmd
}

func writeDeliveries(app *App, ds []api.WebhookDelivery) error {
	return writeRows(app.IO.Out, app.IO.Color, "ID\tEVENT\tSTATUS\tATTEMPTS\tANSWER\tCREATED", ds, func(d api.WebhookDelivery, _ time.Time) []string {
		code := "-"
		if d.ResponseStatusCode != nil {
			code = strconv.Itoa(*d.ResponseStatusCode)
		}
		return []string{d.ID, d.EventType, d.Status, strconv.Itoa(d.AttemptCount), code, d.CreatedAt.Format(time.RFC3339)}
	}, time.Now())
}

// moreDeliveriesNote says, as session ls's note does, how to see the
// deliveries a page of shown (after the newest offset) left out: a
// larger --limit (up to the API's 100) and the next --offset.
func moreDeliveriesNote(id string, shown, offset int) string {
	cmd := "boxkite webhooks deliveries " + id
	what := fmt.Sprintf("showing the newest %d", shown)
	if offset > 0 {
		what = fmt.Sprintf("showing %d after the newest %d", shown, offset)
	}
	how := fmt.Sprintf("'%s --offset %d' shows the next ones", cmd, offset+shown)
	if offset == 0 && shown < 100 {
		how = fmt.Sprintf("'%s --limit %d' shows more, %s", cmd, min(2*shown, 100), how)
	}
	return what + "; there are more: " + how
}

func newWebhooksTestCmd(app *App) *cobra.Command {
	return withExample(newWebhooksQueueCmd(app, "test ID", "Queue a webhook.test event for one subscription and print the delivery's id", "test webhook", cobra.ExactArgs(1),
		func(cmd *cobra.Command, c *client.Client, args []string) (*api.WebhookDelivery, error) {
			id, err := webhookID(cmd.Context(), c, args[0])
			if err != nil {
				return nil, err
			}
			return c.TestWebhook(cmd.Context(), id)
		}), "  hook=$(boxkite webhooks ls --jq '.[0].id')\n  boxkite webhooks test $hook\n  boxkite webhooks deliveries $hook --limit 1")
}

func newWebhooksRedeliverCmd(app *App) *cobra.Command {
	cmd := newWebhooksQueueCmd(app, "redeliver ID DELIVERY_ID", "Send a delivered or failed delivery's event again (same event_id) and print the new delivery's id", "redeliver webhook", cobra.ExactArgs(2),
		func(cmd *cobra.Command, c *client.Client, args []string) (*api.WebhookDelivery, error) {
			id, err := webhookID(cmd.Context(), c, args[0])
			if err != nil {
				return nil, err
			}
			return c.RedeliverWebhook(cmd.Context(), id, args[1])
		})
	cmd.Example = "  boxkite webhooks deliveries ID\n  boxkite webhooks redeliver ID DELIVERY_ID"
	hooks := cmd.ValidArgsFunction
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return hooks(cmd, args, toComplete)
		case 1:
			deliveries := func(c *client.Client, ctx context.Context) ([]api.WebhookDelivery, error) {
				return c.WebhookDeliveries(ctx, args[0], 100, 0)
			}
			return completeFrom(app, deliveries, func(d api.WebhookDelivery) string { return d.ID },
				func(d api.WebhookDelivery) string { return d.EventType + " " + d.Status }, "")(cmd, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return cmd
}

// newWebhooksQueueCmd is a command that queues one delivery with call and
// prints its id (or, with --json, the delivery).
func newWebhooksQueueCmd(app *App, use, short, verb string, args cobra.PositionalArgs,
	call func(*cobra.Command, *client.Client, []string) (*api.WebhookDelivery, error),
) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  usageArgs(args),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			d, err := call(cmd, c, args)
			if err != nil {
				return fmt.Errorf("%s: %w", verb, err)
			}
			if asJSON {
				return out.write(app.IO, d)
			}
			fmt.Fprintln(app.IO.Out, d.ID)
			return nil
		},
	}
	out.register(cmd, api.WebhookDelivery{})
	cmd.ValidArgsFunction = completeWebhooks(app)
	return cmd
}

func completeWebhooks(app *App) cobra.CompletionFunc {
	return completeFrom(app, (*client.Client).ListWebhooks, func(w api.Webhook) string { return w.ID }, func(w api.Webhook) string { return w.URL }, "")
}
