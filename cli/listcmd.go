package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// listing describes a noun's `ls` command: how its items are fetched and
// how each one reads as a table row. Every account-scoped noun (keys,
// ssh-keys, images, volumes, mcp connections) lists the same way: -o json
// prints the items as the API returned them, a table otherwise, and when
// there are none, a note on stderr saying how to make the first one.
type listing[T any] struct {
	short   string                                             // the command's help line
	example string                                             // its --help examples, if any
	noun    string                                             // plural, for the error: "images"
	header  string                                             // tab-separated column names
	empty   string                                             // the note when there are none: "no images; build one with …"
	fetch   func(*client.Client, context.Context) ([]T, error) // a method expression: (*client.Client).ListImages
	row     func(item T, now time.Time) []string
	// omit names JSON fields the items never carry (a webhook's secret):
	// --json FIELDS does not offer them.
	omit []string
	// flags, when set, adds the command's own flags and returns a filter
	// applied before printing (keys ls --all).
	flags func(cmd *cobra.Command) func([]T) []T
	// page, when set, reads the list page by page (a method expression:
	// (*client.Client).ListImagePage) and gives the command session ls's
	// --limit: the newest 30 on a terminal, every item when piped or as
	// JSON, unless --limit is given.
	page func(*client.Client, context.Context, client.ListOptions) (*client.Page[T], error)
}

func newListCmd[T any](app *App, l listing[T]) *cobra.Command {
	var (
		out    outputFlags
		filter func([]T) []T
		limit  int
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   l.short,
		Example: l.example,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageErrorf("pass --limit 1 or more, or --limit 0 for all "+l.noun, "--limit %d is out of range", limit)
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			if l.page != nil && !cmd.Flags().Changed("limit") && app.IO.OutTTY && !asJSON {
				limit = defaultListLimit
			}
			items, more, err := l.read(cmd.Context(), c, limit)
			if err != nil {
				return fmt.Errorf("list %s: %w", l.noun, err)
			}
			if filter != nil {
				items = filter(items)
			}
			if asJSON {
				return out.write(app.IO, items)
			}
			if len(items) == 0 {
				fmt.Fprintln(app.IO.ErrOut, l.empty)
				return nil
			}
			if err := writeRows(app.IO.Out, app.IO.Color, l.header, items, l.row, time.Now()); err != nil {
				return err
			}
			if more {
				noteAfterOutput(app, moreNote(cmd.CommandPath(), len(items)))
			}
			return nil
		},
	}
	if l.flags != nil {
		filter = l.flags(cmd)
	}
	if l.page != nil {
		cmd.Flags().IntVarP(&limit, "limit", "L", 0, "list at most `N` "+l.noun+", newest first; 0 lists all (default "+strconv.Itoa(defaultListLimit)+" on a terminal, all otherwise)")
		cmd.Long = l.short + ", newest first.\n\nOn a terminal the table shows the newest " + strconv.Itoa(defaultListLimit) +
			" and says on stderr how to see\nmore when there are more; --limit N shows N, --limit 0 all of them. Piped,\n" +
			"redirected or with --json, the list is complete unless --limit is given, so\nscripts never miss one."
	}
	out.register(cmd, *new(T), l.omit...)
	pageable(cmd)
	return cmd
}

// read reads the list: every item when limit is 0 (or the noun does not
// page), else the newest limit, in pages of at most the API's largest,
// and whether there are more. A server from before paging answers them
// all at once; the list is then cut here.
func (l *listing[T]) read(ctx context.Context, c *client.Client, limit int) ([]T, bool, error) {
	if l.page == nil || limit == 0 {
		items, err := l.fetch(c, ctx)
		if items == nil && err == nil {
			items = []T{} // [] rather than null for jq users
		}
		return items, false, err
	}
	return readPages(limit, api.MaxListLimit, func(cursor string, n int) ([]T, string, error) {
		p, err := l.page(c, ctx, client.ListOptions{Limit: n, Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return p.Items, p.Next, nil
	})
}

// readPages reads the newest limit items in pages of at most maxPage,
// and whether there are more: page reads n items from cursor ("" for the
// newest) and says the next page's cursor, "" after the last.
func readPages[T any](limit, maxPage int, page func(cursor string, n int) ([]T, string, error)) ([]T, bool, error) {
	out := []T{}
	cursor := ""
	for {
		// One more than wanted says whether there are more.
		items, next, err := page(cursor, min(limit+1-len(out), maxPage))
		if err != nil {
			return nil, false, err
		}
		out = append(out, items...)
		if len(out) > limit {
			return out[:limit], true, nil
		}
		if next == "" {
			return out, false, nil
		}
		cursor = next
	}
}

// moreNote says how to see the items a limited listing by cmd (its
// command path and flags) left out.
func moreNote(cmd string, shown int) string {
	return fmt.Sprintf("showing the newest %d; there are more: '%s --limit %d' shows more, '%s --limit 0' all", shown, cmd, 2*shown, cmd)
}

// writeRows prints items as a table under header; nothing when empty.
func writeRows[T any](w io.Writer, color bool, header string, items []T, row func(T, time.Time) []string, now time.Time) error {
	if len(items) == 0 {
		return nil
	}
	tw := newTable(w)
	tw.Header(color, header)
	for _, it := range items {
		cells := row(it, now)
		for i, c := range cells {
			cells[i] = cell(c) // labels, names, URLs: the server's data
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// withExample gives cmd its --help examples.
func withExample(cmd *cobra.Command, example string) *cobra.Command {
	cmd.Example = example
	return cmd
}

// refsNote is a get's short help for a noun whose get takes, as its ls
// shows it, an id prefix or the label as well as the id.
const refsNote = " (an id prefix or the label is enough)"

// newDetailCmd is a noun's `get ID` as `session get` is: the item as
// detail writes it, "key: value" rows, and the API's JSON with --json,
// -o json or --jq. short is the help's line; omit names JSON fields get
// never shows (outputFlags.register).
func newDetailCmd[T any](app *App, noun, short string, get func(*client.Client, context.Context, string) (T, error), detail func(w io.Writer, item T, now time.Time) error, omit ...string) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: short,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			item, err := get(c, cmd.Context(), args[0])
			if err != nil {
				return listHint(cmd, fmt.Errorf("get %s: %w", noun, err))
			}
			if asJSON {
				return out.write(app.IO, item)
			}
			return detail(app.IO.Out, item, time.Now())
		},
	}
	out.register(cmd, *new(T), omit...)
	pageable(cmd)
	return cmd
}

// listHint gives a not-found error without a hint of its own one that
// says where the ids are: the noun's ls.
func listHint(cmd *cobra.Command, err error) error {
	e, ok := errors.AsType[*api.Error](err)
	if !ok || e.Code != api.CodeNotFound || e.Hint != "" || !cmd.HasParent() {
		return err
	}
	return &hintError{err: err, hint: "list them with '" + cmd.Parent().CommandPath() + " ls'"}
}

// newRmCmd is a noun's `rm ID`; announce says "removed <noun> ID" on
// stderr once done. resolve, when set, turns what was typed (an id
// prefix, a label: idRef) into the id first, so that the prompt names
// it and an ambiguous reference is refused before asking; nil takes the
// argument as it is.
func newRmCmd(app *App, noun, short string, announce bool, resolve func(context.Context, *client.Client, string) (string, error), rm func(*client.Client, context.Context, string) error) *cobra.Command {
	done := func(string) string { return "" }
	if announce {
		done = func(id string) string { return fmt.Sprintf("removed %s %s", noun, id) }
	}
	find := func(_ context.Context, _ *client.Client, id string) (string, error) {
		if id == "" { // not a DELETE of the collection's path
			return "", usageErrorf("name the "+noun+" to remove as its ls lists it", "the %s to remove is empty", noun)
		}
		return id, nil
	}
	if resolve != nil {
		find = func(ctx context.Context, c *client.Client, ref string) (string, error) {
			id, err := resolve(ctx, c, ref)
			if err != nil {
				return "", fmt.Errorf("remove %s: %w", noun, err)
			}
			return id, nil
		}
	}
	return newRemovalCmd(app, removal[string]{
		use:    "rm ID",
		short:  short,
		long:   short + ". On a terminal it asks first; elsewhere it needs --yes.",
		find:   find,
		prompt: func(id string) string { return fmt.Sprintf("Remove %s %s?", noun, id) },
		remove: func(ctx context.Context, c *client.Client, id string) error {
			if err := rm(c, ctx, id); err != nil {
				return fmt.Errorf("remove %s: %w", noun, err)
			}
			return nil
		},
		listHint: true,
		done:     done,
	})
}

// removal is an `rm REF` that resolves REF to one item first (an id, a
// unique prefix, a name), so its prompt and its report can name it.
type removal[T any] struct {
	use, short, long string
	example          string // its --help examples, if any
	aliases          []string
	find             func(context.Context, *client.Client, string) (T, error)
	check            func(T) error // refuses before the prompt; nil for none
	prompt           func(T) string
	remove           func(context.Context, *client.Client, T) error
	listHint         bool           // a not-found error says where the ids are (listHint)
	done             func(T) string // reported on stderr; "" for nothing
}

// newRemovalCmd builds the command of rm. On a terminal it asks first;
// elsewhere it needs --yes.
func newRemovalCmd[T any](app *App, rm removal[T]) *cobra.Command {
	var conf confirmation
	cmd := &cobra.Command{
		Use:     rm.use,
		Aliases: rm.aliases,
		Example: rm.example,
		Short:   rm.short,
		Long:    rm.long,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := conf.client(app, args)
			if err != nil {
				return err
			}
			item, err := rm.find(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if rm.check != nil {
				if err := rm.check(item); err != nil {
					return err
				}
			}
			if err := conf.ask(app, rm.prompt(item)); err != nil {
				return err
			}
			if err := rm.remove(cmd.Context(), c, item); err != nil {
				if rm.listHint {
					return listHint(cmd, err)
				}
				return err
			}
			if msg := rm.done(item); msg != "" {
				fmt.Fprintln(app.IO.ErrOut, msg)
			}
			return nil
		},
	}
	conf.register(cmd)
	return cmd
}
