package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// flags, when set, adds the command's own flags and returns a filter
	// applied before printing (keys ls --all).
	flags func(cmd *cobra.Command) func([]T) []T
}

func newListCmd[T any](app *App, l listing[T]) *cobra.Command {
	var (
		out    outputFlags
		filter func([]T) []T
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   l.short,
		Example: l.example,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			items, err := l.fetch(c, cmd.Context())
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
			return writeRows(app.IO.Out, app.IO.Color, l.header, items, l.row, time.Now())
		},
	}
	if l.flags != nil {
		filter = l.flags(cmd)
	}
	out.register(cmd, *new(T))
	pageable(cmd)
	return cmd
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

// newGetCmd is a noun's `get ID`: the item as JSON (--json and -o json
// are accepted, as on every command that prints data).
func newGetCmd[T any](app *App, noun string, get func(*client.Client, context.Context, string) (T, error)) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show one " + noun + " as JSON",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := out.wantJSON(cmd); err != nil {
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
			return out.write(app.IO, item)
		},
	}
	out.register(cmd, *new(T))
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
// stderr once done.
func newRmCmd(app *App, noun, short string, announce bool, rm func(*client.Client, context.Context, string) error) *cobra.Command {
	done := func(string) string { return "" }
	if announce {
		done = func(id string) string { return fmt.Sprintf("removed %s %s", noun, id) }
	}
	return newRemovalCmd(app, removal[string]{
		use:    "rm ID",
		short:  short,
		long:   short + ". On a terminal it asks first; elsewhere it needs --yes.",
		find:   func(_ context.Context, _ *client.Client, id string) (string, error) { return id, nil },
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
