package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
	"github.com/spf13/cobra"
)

func newSessionCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "session",
		Aliases: []string{"sandbox", "sbx"},
		Short:   "Create, list, inspect, extend, pause, snapshot, fork and remove sandboxes",
		GroupID: groupSandboxes,
	})
	cmd.AddCommand(
		newSessionCreateCmd(app),
		newSessionLsCmd(app),
		newSessionGetCmd(app),
		newSessionRmCmd(app),
		newSessionExtendCmd(app),
		newSessionPauseCmd(app),
		newSessionResumeCmd(app),
		newSessionSnapshotCmd(app),
		newSessionRestoreCmd(app),
		newSessionForkCmd(app),
	)
	return cmd
}

func newSessionCreateCmd(app *App) *cobra.Command {
	var (
		req      api.CreateSandboxRequest
		lifetime time.Duration
		volumes  []string
		out      outputFlags
	)
	cmd := &cobra.Command{
		Use:     "create [flags]",
		Aliases: []string{"cr", "new"},
		Short:   "Create a sandbox and print its id",
		Example: `  boxkite session create
  boxkite session create --label build --size medium --lifetime 2h
  id=$(boxkite session create --label scratch)`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if err := checkLabel("--label", req.Label); err != nil {
				return err
			}
			if err := completeCreateRequest(cmd, &req, lifetime, volumes); err != nil {
				return err
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			if err := resolveCreateRefs(cmd.Context(), c, &req); err != nil {
				return err
			}
			sbs, err := c.CreateSandboxes(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("create sandbox: %w", err)
			}
			if asJSON {
				if req.Count > 1 {
					return out.write(app.IO, sbs)
				}
				return out.write(app.IO, sbs[0])
			}
			for _, sb := range sbs {
				if app.IO.ErrTTY {
					fmt.Fprintf(app.IO.ErrOut, "created sandbox %s (%s, expires in %s)\n", sb.ID, sb.Size, tui.ShortDuration(time.Until(sb.ExpiresAt)))
				}
				fmt.Fprintln(app.IO.Out, sb.ID)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Label, "label", "", "a `name` for the sandbox (selects it with -s)")
	f.StringVar(&req.Size, "size", api.SizeSmall, "`size`: small, medium or large")
	f.Float64Var(&req.StorageGB, "storage-gb", 0, "workspace storage in `GB` (default: the server's)")
	f.Var(newDurationValue(&lifetime, 0, time.Minute), "lifetime", "how long the sandbox lives, e.g. 30m or 2h; a bare number is minutes (default: the server's)")
	f.IntVar(&req.Count, "count", 1, "how many sandboxes to create (1-10)")
	f.BoolVar(&req.AutoPause, "auto-pause", false, "pause the sandbox when its lifetime ends instead of destroying it ('boxkite session resume' gives it a new one)")
	f.StringVar(&req.ImageID, "image", "", "image to boot from: its `ID`, id prefix or label")
	f.StringArrayVar(&volumes, "volume", nil, "mount a volume (its id, id prefix or label), `ID=/path` (repeatable)")
	f.StringArrayVar(&req.MCPConnectionNames, "mcp-connection", nil, "MCP connection `NAME` to allow (repeatable)")
	f.StringArrayVar(&req.SecretNames, "secret", nil, "secret `NAME` the sandbox may use through the server's http_request (repeatable; see 'boxkite secrets')")
	out.register(cmd, api.Sandbox{})
	cmd.RegisterFlagCompletionFunc("image", completeImages(app))
	cmd.RegisterFlagCompletionFunc("volume", completeVolumes(app, "="))
	cmd.RegisterFlagCompletionFunc("mcp-connection", completeMCPConnections(app, true))
	cmd.RegisterFlagCompletionFunc("size", cobra.FixedCompletions([]string{api.SizeSmall, api.SizeMedium, api.SizeLarge}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// maxCreateCount is the API's bound on the sandboxes one create or fork
// makes.
const maxCreateCount = 10

// completeCreateRequest validates create's flags and folds them into req.
func completeCreateRequest(cmd *cobra.Command, req *api.CreateSandboxRequest, lifetime time.Duration, volumes []string) error {
	hint := helpHint(cmd)
	switch req.Size {
	case api.SizeSmall, api.SizeMedium, api.SizeLarge:
	default:
		return usageErrorf(hint, "unknown --size %q (want small, medium or large)", req.Size)
	}
	if req.Count < 1 || req.Count > maxCreateCount {
		return usageErrorf(hint, "--count must be between 1 and %d, got %d", maxCreateCount, req.Count)
	}
	if req.StorageGB < 0 {
		return usageErrorf(hint, "--storage-gb must be positive")
	}
	if lifetime > 0 {
		m, err := lifetimeMinutes(cmd, lifetime)
		if err != nil {
			return err
		}
		req.LifetimeMinutes = m
	}
	for _, v := range volumes {
		id, path, ok := strings.Cut(v, "=")
		if !ok || id == "" || !strings.HasPrefix(path, "/") {
			return usageErrorf("write it as --volume ID=/absolute/path", "invalid --volume %q", v)
		}
		if req.VolumeMounts == nil {
			req.VolumeMounts = map[string]string{}
		}
		if prev, dup := req.VolumeMounts[id]; dup {
			return volumeTwice(id, prev, path)
		}
		req.VolumeMounts[id] = path
	}
	return nil
}

// volumeTwice refuses a create that names one volume twice: a sandbox
// mounts a volume at one path (the API's volume_mounts maps each volume
// to its path), and the second --volume used to replace the first.
func volumeTwice(ref, first, second string) error {
	return usageErrorf("mount each volume once: --volume "+ref+"=/workspace/…",
		"volume %s is given twice (at %s and %s)", ref, first, second)
}

// resolveCreateRefs turns the image and volumes a create names by label
// or id prefix into their ids.
func resolveCreateRefs(ctx context.Context, c *client.Client, req *api.CreateSandboxRequest) error {
	if req.ImageID != "" {
		id, err := imageID(ctx, c, req.ImageID)
		if err != nil {
			return err
		}
		req.ImageID = id
	}
	if len(req.VolumeMounts) == 0 {
		return nil
	}
	mounts := make(map[string]string, len(req.VolumeMounts))
	for ref, path := range req.VolumeMounts {
		id, err := volumeID(ctx, c, ref)
		if err != nil {
			return err
		}
		if prev, dup := mounts[id]; dup {
			return volumeTwice(id, prev, path)
		}
		mounts[id] = path
	}
	req.VolumeMounts = mounts
	return nil
}

func newSessionLsCmd(app *App) *cobra.Command {
	var (
		all   bool
		limit int
		out   outputFlags
	)
	cmd := &cobra.Command{
		Use:     "ls [flags]",
		Aliases: []string{"list"},
		Short:   "List active sandboxes (--all includes destroyed ones)",
		Long: `List the account's sandboxes, newest first: the active and paused ones, or
with --all also those destroyed or lost.

On a terminal the table shows the newest ` + strconv.Itoa(defaultListLimit) + ` and says on stderr how to see
more when there are more; --limit N shows N, --limit 0 all of them. Piped,
redirected or with --json, the list is complete unless --limit is given, so
scripts never miss a sandbox.`,
		Example: `  boxkite session ls
  boxkite session ls --all --limit 100
  boxkite session ls --all --json id,status,destroy_reason
  boxkite session ls --jq '.[] | select(.label == "build") | .id'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageErrorf("pass --limit 1 or more, or --limit 0 for every sandbox", "--limit %d is out of range", limit)
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("limit") && app.IO.OutTTY && !asJSON {
				limit = defaultListLimit
			}
			sbs, more, err := listSandboxes(cmd.Context(), c, !all, limit)
			if err != nil {
				return fmt.Errorf("list sandboxes: %w", err)
			}
			if asJSON {
				return out.write(app.IO, sbs)
			}
			if len(sbs) == 0 {
				note := "no active sandboxes; create one with 'boxkite session create' (--all lists destroyed ones too)"
				if all {
					note = "no sandboxes; create one with 'boxkite session create'"
				}
				fmt.Fprintln(app.IO.ErrOut, note)
				return nil
			}
			if err := writeSandboxTable(app.IO.Out, sbs, time.Now(), app.IO.Color); err != nil {
				return err
			}
			if more {
				noteAfterOutput(app, moreSandboxesNote(len(sbs), all))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "include destroyed and lost sandboxes")
	cmd.Flags().IntVarP(&limit, "limit", "L", 0, "list at most `N` sandboxes, newest first; 0 lists all (default "+strconv.Itoa(defaultListLimit)+" on a terminal, all otherwise)")
	out.register(cmd, api.Sandbox{})
	pageable(cmd)
	return cmd
}

// defaultListLimit is how many sandboxes session ls shows on a terminal
// without --limit, as gh's lists show 30.
const defaultListLimit = 30

// moreSandboxesNote says how to see the sandboxes a limited listing left out.
func moreSandboxesNote(shown int, all bool) string {
	cmd := "boxkite session ls"
	if all {
		cmd += " --all"
	}
	return moreNote(cmd, shown)
}

// listSandboxes reads the account's sandboxes, newest first: all of them
// when limit is 0, else the newest limit, in pages of at most the API's
// largest, and whether there are more. A server from before paging answers
// them all at once; the list is then cut here.
func listSandboxes(ctx context.Context, c *client.Client, activeOnly bool, limit int) ([]api.Sandbox, bool, error) {
	if limit == 0 {
		sbs, err := c.ListSandboxes(ctx, activeOnly)
		if sbs == nil {
			sbs = []api.Sandbox{} // [] rather than null for jq users
		}
		return sbs, false, err
	}
	return readPages(limit, api.MaxSandboxListLimit, func(cursor string, n int) ([]api.Sandbox, string, error) {
		p, err := c.ListSandboxPage(ctx, client.SandboxListOptions{ActiveOnly: activeOnly, Limit: n, Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return p.Sandboxes, p.Next, nil
	})
}

// writeSandboxTable prints sandboxes as aligned columns, times relative to now.
func writeSandboxTable(w io.Writer, sbs []api.Sandbox, now time.Time, color bool) error {
	tw := newTable(w)
	tw.Header(color, "ID\tSTATUS\tLABEL\tSIZE\tAGE\tEXPIRES")
	for _, sb := range sbs {
		label := sb.Label
		if label == "" {
			label = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sb.ID, sb.Status, cell(label), sb.Size, tui.Age(sb.CreatedAt, now), tui.Expiry(sb, now))
	}
	return tw.Flush()
}

func newSessionGetCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:     "get ID",
		Aliases: []string{"show"},
		Short:   "Show one sandbox" + refsNote,
		Example: `  boxkite session get build
  boxkite session get 3f2a --json expires_at --jq .expires_at`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeSandboxes(app, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, _, sb, err := sandboxArg(cmd, app, &out, args[0], false)
			if err != nil {
				return err
			}
			if asJSON {
				return out.write(app.IO, sb)
			}
			return writeSandboxDetail(app.IO.Out, sb, time.Now())
		},
	}
	out.register(cmd, api.Sandbox{})
	return cmd
}

func writeSandboxDetail(w io.Writer, sb api.Sandbox, now time.Time) error {
	tw := newTable(w)
	tw.Detail("id", sb.ID)
	tw.Detail("status", sb.Status)
	tw.Detail("label", sb.Label)
	tw.Detail("size", sb.Size)
	if sb.StorageGB > 0 {
		tw.Detail("storage", fmt.Sprintf("%g GB", sb.StorageGB))
	}
	tw.Detail("created", stamp(sb.CreatedAt, now, " ago"))
	if sb.Status == api.StatusActive {
		tw.Detail("expires", stamp(sb.ExpiresAt, now, ""))
	}
	if sb.DestroyedAt != nil {
		tw.Detail("destroyed", stamp(*sb.DestroyedAt, now, " ago"))
		tw.Detail("reason", sb.DestroyReason)
	}
	if p := sb.SidecarProtocol; p != nil {
		v := strconv.Itoa(*p)
		if *p < api.SidecarProtocol {
			v += fmt.Sprintf(" (older than this boxkite's %d: the sandbox started before an upgrade; `boxkite session fork %s` gives one with the current sidecar)", api.SidecarProtocol, sb.ID)
		}
		tw.Detail("sidecar protocol", v)
	}
	if sb.FrozenReason != "" {
		tw.Detail("frozen", tui.FrozenText(sb.FrozenReason))
	}
	return tw.Flush()
}

// stamp prints an absolute time with a relative one after it.
func stamp(t, now time.Time, suffix string) string {
	if t.IsZero() {
		return ""
	}
	rel := tui.ShortDuration(now.Sub(t)) + suffix
	if suffix == "" {
		rel = "in " + tui.ShortDuration(t.Sub(now))
	}
	return fmt.Sprintf("%s (%s)", t.Local().Format(time.RFC3339), rel)
}

func newSessionRmCmd(app *App) *cobra.Command {
	var (
		all  bool
		conf confirmation
	)
	cmd := &cobra.Command{
		Use:               "rm ID... | --all",
		Aliases:           []string{"delete", "remove"},
		Short:             "Destroy sandboxes",
		Long:              "Destroy sandboxes. On a terminal it asks first; elsewhere it needs --yes.",
		Example:           "  boxkite session rm 3f2a\n  boxkite session rm --all --yes",
		ValidArgsFunction: completeSandboxes(app, true),
		Args:              idsOrAll(&all, "sandbox ids", "give the sandboxes to remove, or --all"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := conf.client(app, args)
			if err != nil {
				return err
			}
			return removeSandboxes(cmd.Context(), c, args, all, app.IO.ErrOut, func(sbs []api.Sandbox) error {
				names := make([]string, len(sbs))
				for i, sb := range sbs {
					names[i] = sandboxName(sb)
				}
				what := "sandbox " + names[0]
				if len(sbs) > 1 {
					what = fmt.Sprintf("%d sandboxes (%s)", len(sbs), itemList(names))
				}
				return conf.ask(app, "Destroy "+what+"? Their files and processes go with them.")
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "destroy every active sandbox")
	conf.register(cmd)
	return cmd
}

// sandboxName is a sandbox's id, with its label when it has one.
func sandboxName(sb api.Sandbox) string {
	if sb.Label != "" {
		return sb.ID + " (" + sb.Label + ")"
	}
	return sb.ID
}

type sandboxRemover interface {
	sandboxLister
	DeleteSandbox(ctx context.Context, id string) error
}

// removeSandboxes deletes each sandbox once confirm agrees, and keeps
// going past failures, so one bad reference does not leave the rest
// running; all errors are returned.
func removeSandboxes(ctx context.Context, c sandboxRemover, refs []string, all bool, stderr io.Writer, confirm func([]api.Sandbox) error) error {
	var sbs []api.Sandbox
	var errs []error
	if all {
		active, err := c.ListSandboxes(ctx, true)
		if err != nil {
			return fmt.Errorf("list sandboxes: %w", err)
		}
		sbs = append(sbs, active...)
	}
	for _, ref := range refs {
		sb, err := resolveSandbox(ctx, c, ref, true)
		if err != nil && sb.Status == api.StatusPaused {
			err = nil // a paused sandbox is removed as it is (docs/snapshots.md)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sbs = append(sbs, sb)
	}
	if len(sbs) > 0 {
		if err := confirm(sbs); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	for i, sb := range sbs {
		err := c.DeleteSandbox(ctx, sb.ID)
		if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeRateLimited {
			// Every later delete would be refused alike (an error line
			// each, hundreds with --all past the server's rate): stop, and
			// say how many are left. The server's hint says how long to wait.
			return errors.Join(append(errs, fmt.Errorf("removed %d of %d sandboxes; the other %d are still active: remove sandbox %s: %w",
				i, len(sbs), len(sbs)-i, sb.ID, err))...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.ID, err))
			continue
		}
		fmt.Fprintf(stderr, "removed sandbox %s\n", sb.ID)
	}
	return errors.Join(errs...)
}

func newSessionExtendCmd(app *App) *cobra.Command {
	var (
		lifetime time.Duration
		out      outputFlags
	)
	cmd := &cobra.Command{
		Use:               "extend ID --lifetime DURATION",
		Short:             "Make a sandbox expire a given time from now",
		Example:           "  boxkite session extend 3f2a --lifetime 1h",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeSandboxes(app, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if lifetime <= 0 {
				return usageErrorf(helpHint(cmd), "--lifetime is required, e.g. --lifetime 1h")
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			sb, err := resolveSandbox(cmd.Context(), c, args[0], true)
			if err != nil {
				return err
			}
			minutes, err := lifetimeMinutes(cmd, lifetime)
			if err != nil {
				return err
			}
			got, err := c.ExtendSandbox(cmd.Context(), sb.ID, minutes)
			if err != nil {
				return fmt.Errorf("extend sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				return out.write(app.IO, got)
			}
			fmt.Fprintln(app.IO.Out, got.ExpiresAt.Format(time.RFC3339))
			if app.IO.ErrTTY {
				fmt.Fprintf(app.IO.ErrOut, "sandbox %s now expires in %s\n", got.ID, tui.ShortDuration(time.Until(got.ExpiresAt)))
			}
			return nil
		},
	}
	cmd.Flags().Var(newDurationValue(&lifetime, 0, time.Minute), "lifetime", "new lifetime counted from now, e.g. 30m or 1h; a bare number is minutes")
	out.register(cmd, api.Sandbox{})
	return cmd
}

// completeSandboxes offers sandbox ids (with labels as descriptions) for
// shell completion; failures just offer nothing.
func completeSandboxes(app *App, activeOnly bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := app.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
		defer cancel()
		sbs, err := c.ListSandboxes(ctx, activeOnly)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return sandboxCompletions(sbs, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// sandboxCompletions are the ids that start with toComplete, described by
// their labels, and once something is typed the labels that start with it,
// described by their ids: a reference may be either, and `-s bu<TAB>`
// offered nothing for a sandbox labelled build. A label with white space
// is left out: the shell would split it.
func sandboxCompletions(sbs []api.Sandbox, toComplete string) []cobra.Completion {
	var out []cobra.Completion
	for _, sb := range sbs {
		if strings.HasPrefix(sb.ID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(sb.ID, sb.Label))
		}
	}
	offered := map[string]bool{} // a label a destroyed sandbox had too
	for _, sb := range sbs {
		l := sb.Label
		if toComplete != "" && strings.HasPrefix(l, toComplete) && !offered[l] && !strings.ContainsFunc(l, unicode.IsSpace) {
			offered[l] = true
			out = append(out, cobra.CompletionWithDesc(l, sb.ID))
		}
	}
	return out
}

// lifetimeMinutes converts --lifetime to the API's whole minutes: less than
// a minute is refused, and anything else not a whole number of minutes is
// rounded up and said so, never silently changed.
func lifetimeMinutes(cmd *cobra.Command, d time.Duration) (int, error) {
	if d < time.Minute {
		return 0, usageErrorf("use 1m or more, e.g. --lifetime 30m",
			"--lifetime %s is less than a minute: sandbox lifetimes are whole minutes", compactDuration(d))
	}
	m := wholeUnits(d, time.Minute)
	if time.Duration(m)*time.Minute != d {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: --lifetime %s rounded up to %s: sandbox lifetimes are whole minutes\n",
			compactDuration(d), compactDuration(time.Duration(m)*time.Minute))
	}
	return m, nil
}
