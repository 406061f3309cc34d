package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/tui"
)

// templateRun is the state of one --template execution: the rows
// tablerow collected and not yet rendered.
type templateRun struct {
	stdio IO
	rows  *table
	buf   bytes.Buffer
}

// templateFuncs are gh's template helpers. run is nil when the template is
// only parsed.
func templateFuncs(run *templateRun) template.FuncMap {
	color := func(style string, v any) string {
		if run == nil || !run.stdio.Color {
			return templateText(v)
		}
		return ansiStyle(style) + templateText(v) + "\x1b[0m"
	}
	return template.FuncMap{
		"tablerow": func(cells ...any) string {
			if run == nil {
				return ""
			}
			strs := make([]string, len(cells))
			for i, c := range cells {
				strs[i] = strings.ReplaceAll(templateText(c), "\t", " ")
			}
			fmt.Fprintln(run.rows, strings.Join(strs, "\t"))
			return ""
		},
		"tablerender": func() (string, error) {
			if run == nil {
				return "", nil
			}
			return run.renderRows()
		},
		"timeago": func(v any) (string, error) {
			t, err := parseTemplateTime(v)
			if err != nil {
				return "", err
			}
			return tui.ShortDuration(time.Since(t)) + " ago", nil
		},
		"timefmt": func(layout string, v any) (string, error) {
			t, err := parseTemplateTime(v)
			if err != nil {
				return "", err
			}
			return t.Local().Format(layout), nil
		},
		"color":     color,
		"autocolor": color,
		"pluck": func(field string, list []any) []any {
			var out []any
			for _, item := range list {
				if m, ok := item.(map[string]any); ok {
					out = append(out, m[field])
				}
			}
			return out
		},
		"join": func(sep string, list []any) string {
			strs := make([]string, len(list))
			for i, v := range list {
				strs[i] = templateText(v)
			}
			return strings.Join(strs, sep)
		},
		"truncate": func(n int, v any) string { return truncate(templateText(v), n) },
		"hyperlink": func(link, text string) string {
			if run == nil || !run.stdio.Color {
				return text
			}
			return "\x1b]8;;" + link + "\x1b\\" + text + "\x1b]8;;\x1b\\"
		},
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
	}
}

// templateText is a JSON value as the helpers print it: null as nothing
// (as gh does), anything else as fmt prints it.
func templateText(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// renderRows lays out the rows collected so far and returns them.
func (r *templateRun) renderRows() (string, error) {
	var out strings.Builder
	r.rows.out = &out
	err := r.rows.Flush()
	return out.String(), err
}

// runTemplate executes t over data; rows tablerow left are rendered at the end.
func runTemplate(stdio IO, t *template.Template, data any) error {
	run := &templateRun{stdio: stdio, rows: newTable(stdio.Out)}
	run.rows.maxWidth = terminalWidth(stdio.Out)
	t = template.Must(t.Clone()).Funcs(templateFuncs(run))
	if err := t.Execute(&run.buf, data); err != nil {
		return &hintError{err: fmt.Errorf("run the template: %w", err), hint: runtimeHint}
	}
	rest, err := run.renderRows()
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(stdio.Out, run.buf.String()+rest)
	return err
}

// parseTemplateTime reads the API's RFC 3339 times (or Unix seconds).
func parseTemplateTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case string:
		return time.Parse(time.RFC3339Nano, x)
	case json.Number:
		sec, err := strconv.ParseInt(x.String(), 10, 64)
		return time.Unix(sec, 0), err
	case nil:
		return time.Time{}, fmt.Errorf("no time (null)")
	}
	return time.Time{}, fmt.Errorf("not a time: %v", v)
}

// ansiStyle is the escape sequence of a colour style as gh writes them:
// a colour name, optionally +b (bold), +u (underline), +d (dim), or
// "bold" alone.
func ansiStyle(style string) string {
	colors := map[string]string{
		"black": "30", "red": "31", "green": "32", "yellow": "33", "blue": "34",
		"magenta": "35", "cyan": "36", "white": "37", "gray": "90", "grey": "90",
	}
	attrs := map[string]string{"b": "1", "d": "2", "u": "4", "bold": "1"}
	name, mods, _ := strings.Cut(style, "+")
	var codes []string
	if c, ok := colors[name]; ok {
		codes = append(codes, c)
	} else if a, ok := attrs[name]; ok {
		codes = append(codes, a)
	}
	for _, m := range strings.Split(mods, "") {
		if a, ok := attrs[m]; ok {
			codes = append(codes, a)
		}
	}
	if len(codes) == 0 {
		return ""
	}
	return "\x1b[" + strings.Join(codes, ";") + "m"
}

// newFormattingHelp is `boxkite help formatting`: a help topic, not a command.
func newFormattingHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "formatting",
		Short: "Output formats: --json FIELDS, --jq and --template",
		Long: `Every command that prints data takes the same output flags.

  --json               print the API's JSON (-o json is the same)
  --json id,label      only those fields; an unknown one lists the valid ones
                       (write --json=FIELDS when the next word could be an
                       argument)
  --jq EXPR, -q        filter the JSON with a jq expression; strings print
                       raw, other values as JSON
  --template TMPL, -t  format the JSON with a Go text/template

The fields are the API's JSON names; each command's help lists them. jq
runs in-process (gojq): no jq binary is needed, and $ENV is empty.

Template helpers, as in gh:
  tablerow CELLS...    add an aligned row; rows print at the end or at
                       tablerender
  tablerender          print the rows collected so far
  timeago TIME         "5m ago" from an RFC 3339 time
  timefmt LAYOUT TIME  a time in Go's layout, e.g. "2006-01-02"
  color STYLE TEXT     colour (red, green+b, …) when colour is on: a terminal
                       without NO_COLOR or CLICOLOR=0, or CLICOLOR_FORCE=1
  autocolor STYLE TEXT the same
  pluck FIELD LIST     a field of each object of a list
  join SEP LIST        join a list with a separator
  truncate N TEXT      cut to N columns with "…" (nothing when N ≤ 0)
  hyperlink URL TEXT   a terminal hyperlink (plain text when piped)
  json VALUE           a value as compact JSON

Examples:
  boxkite session ls --json id,label --jq '.[].label'
  boxkite session ls --template '{{range .}}{{.id}}{{"\n"}}{{end}}'
  boxkite session ls -t '{{range .}}{{tablerow .id .status (timeago .created_at)}}{{end}}'
  boxkite keys ls --jq 'map(select(.role == "admin")) | length'`,
	}
}
