package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"
)

// outputFlags are the machine-output flags of every command that prints
// data, as in gh: --json [FIELDS], -o/--output json, --jq EXPR and
// --template TMPL. Register them with register, check them with wantJSON
// before any request, and print the data with write (or writeItem for
// each item of a stream).
type outputFlags struct {
	// fields are what --json FIELDS may name: the JSON field names of the
	// printed type (of its items, for a list), with each one's zero value
	// for the items whose JSON omits it.
	fields []string
	zero   map[string]any

	json   jsonFlag
	format string
	jq     string
	tmpl   string

	// Set by wantJSON from the flags above.
	query    *gojq.Code
	template *template.Template
}

// jsonFlag is --json's value: absent, present (every field), or a list
// of fields. It replaced a bool flag, so "--json" alone still prints
// everything and --json=true/false are still understood.
type jsonFlag struct {
	set    bool
	fields []string
}

// allFields is what pflag stores for a bare --json; it is also the
// placeholder help shows: --json[=FIELDS].
const allFields = "FIELDS"

func (f *jsonFlag) String() string { return strings.Join(f.fields, ",") }

// Type is empty so that help shows --json[=FIELDS] and not a type name.
func (f *jsonFlag) Type() string { return "" }

func (f *jsonFlag) Set(s string) error {
	switch s {
	case allFields, "true":
		f.set, f.fields = true, nil
	case "false":
		f.set, f.fields = false, nil
	default:
		f.set, f.fields = true, nil
		for name := range strings.SplitSeq(s, ",") {
			if name = strings.TrimSpace(name); name != "" {
				f.fields = append(f.fields, name)
			}
		}
	}
	return nil
}

// annotationJSONFields marks a command with --json and lists its fields,
// for Execute's reading of "--json FIELDS" and for tests of the tree.
const annotationJSONFields = "boxkite:json-fields"

// register adds the flags to cmd. example is a value of the type the
// command prints as JSON (a slice or a pointer: the type of its items);
// its JSON fields are those --json FIELDS may pick, but for omit: fields
// the command never shows (a webhook's signing secret, which only the
// create's answer has), which --json FIELDS refuses as unknown.
func (o *outputFlags) register(cmd *cobra.Command, example any, omit ...string) {
	o.fields, o.zero = jsonFields(example)
	for _, name := range omit {
		o.fields = slices.DeleteFunc(o.fields, func(f string) bool { return f == name })
		delete(o.zero, name)
	}
	f := cmd.Flags()
	usage := "print JSON (the API's shapes); only the comma-separated FIELDS when given"
	if len(o.fields) == 0 {
		usage = "print JSON (the API's shapes)"
	}
	f.VarPF(&o.json, "json", "", usage).NoOptDefVal = allFields
	f.StringVarP(&o.format, "output", "o", "text", "output `format`: text or json")
	f.StringVarP(&o.jq, "jq", "q", "", "print the JSON through a jq `expression` (implies --json)")
	f.StringVarP(&o.tmpl, "template", "t", "", "print the JSON through a Go `template` (implies --json; see 'boxkite help formatting')")
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationJSONFields] = strings.Join(o.fields, ",")
	if len(o.fields) > 0 {
		long := cmd.Long
		if long == "" {
			long = cmd.Short + "."
		}
		cmd.Long = long + "\n\nJSON fields (--json FIELDS): " + strings.Join(o.fields, ", ") + "."
	}
}

// registerFilters adds only --jq and --template, for a command whose
// output is always JSON of no fixed type (boxkite api).
func (o *outputFlags) registerFilters(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.jq, "jq", "q", "", "print the JSON through a jq `expression`")
	f.StringVarP(&o.tmpl, "template", "t", "", "print the JSON through a Go `template` (see 'boxkite help formatting')")
}

// wantJSON validates the flags and reports whether JSON (plain, picked,
// filtered by jq or formatted by a template) was asked for. Mistakes are
// usage errors, found before any request is made.
func (o *outputFlags) wantJSON(cmd *cobra.Command) (bool, error) {
	hint := helpHint(cmd)
	asJSON := o.json.set
	switch o.format {
	case "text", "table", "":
	case "json":
		asJSON = true
	default:
		return false, usageErrorf(hint, "unknown output format %q (want text or json)", o.format)
	}
	if o.jq != "" && o.tmpl != "" {
		return false, usageErrorf(hint, "--jq and --template do not go together; pick one")
	}
	for _, name := range o.json.fields {
		if len(o.fields) == 0 {
			return false, usageErrorf("use --json alone, or --jq to pick from the JSON", "this command's JSON has no fields to pick")
		}
		if _, ok := o.zero[name]; !ok {
			return false, usageErrorf("available fields: "+strings.Join(o.fields, ", "), "unknown JSON field %q", name)
		}
	}
	if o.jq != "" {
		q, err := gojq.Parse(o.jq)
		if err != nil {
			return false, usageErrorf("check the expression; the jq manual describes the syntax", "invalid --jq expression: %v", err)
		}
		// No environment ($ENV) and no modules: an expression only sees the data.
		if o.query, err = gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil })); err != nil {
			return false, usageErrorf("check the expression; the jq manual describes the syntax", "invalid --jq expression: %v", err)
		}
		asJSON = true
	}
	if o.tmpl != "" {
		t, err := template.New("template").Funcs(templateFuncs(nil)).Parse(o.tmpl)
		if err != nil {
			return false, usageErrorf("run 'boxkite help formatting' for the template helpers", "invalid --template: %v", err)
		}
		o.template = t
		asJSON = true
	}
	return asJSON, nil
}

// write prints v (the API's shape) as the flags ask: indented JSON, only
// some fields, through jq, or through a template.
func (o *outputFlags) write(stdio IO, v any) error {
	if len(o.json.fields) == 0 && o.query == nil && o.template == nil {
		return writeJSON(stdio.Out, v) // as is: keeps the type's field order
	}
	data, err := o.generic(v)
	if err != nil {
		return err
	}
	switch {
	case o.query != nil:
		return runJQ(stdio, o.query, data)
	case o.template != nil:
		return runTemplate(stdio, o.template, data)
	}
	return writeJSON(stdio.Out, data)
}

// writeItem prints one item of a stream (a log being followed) on one
// line, or through jq or the template.
func (o *outputFlags) writeItem(stdio IO, v any) error {
	data, err := o.generic(v)
	if err != nil {
		return err
	}
	switch {
	case o.query != nil:
		return runJQ(IO{Out: stdio.Out, Color: stdio.Color}, o.query, data) // compact, whatever the terminal
	case o.template != nil:
		return runTemplate(stdio, o.template, data)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdio.Out, "%s\n", b)
	return err
}

// generic turns v into what jq and templates work on (maps, slices,
// json.Number) with only the picked fields.
func (o *outputFlags) generic(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // int64 ids and byte counts stay exact
	var data any
	if err := dec.Decode(&data); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	if len(o.json.fields) > 0 {
		data = pickFields(data, o.json.fields, o.zero)
	}
	return data, nil
}

// runtimeHint is the advice for a --jq or --template that failed on the
// data rather than on its syntax.
const runtimeHint = "run the command with --json alone to see the data the expression works on"

// runJQ prints each result of the query: strings as they are (like
// jq -r, and like gh), anything else as JSON, indented on a terminal.
func runJQ(stdio IO, q *gojq.Code, data any) error {
	iter := q.Run(data)
	for {
		v, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, ok := v.(error); ok {
			if h, ok := err.(*gojq.HaltError); ok && h.Value() == nil {
				return nil // halt: a normal end
			}
			return &hintError{err: fmt.Errorf("jq: %w", err), hint: runtimeHint}
		}
		if s, ok := v.(string); ok {
			if _, err := fmt.Fprintln(stdio.Out, s); err != nil {
				return err
			}
			continue
		}
		b, err := gojq.Marshal(v)
		if err != nil {
			return fmt.Errorf("jq: %w", err)
		}
		if stdio.OutTTY {
			var ind bytes.Buffer
			if json.Indent(&ind, b, "", "  ") == nil {
				b = ind.Bytes()
			}
		}
		if _, err := fmt.Fprintf(stdio.Out, "%s\n", b); err != nil {
			return err
		}
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "&&" in a command stays readable
	return enc.Encode(v)
}

// compactDuration is time.Duration's String without zero units: 2h, 1h30m, 30s.
func compactDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// truncate cuts s to at most n terminal cells, marking the cut with "…".
// Width, not runes: a wide character (CJK, emoji) takes two cells, and a
// cut by runes would overflow its column. A column of width 0 or less
// holds nothing, not even the mark.
func truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// jsonOut is out when asJSON, else nil: helpers that print either way
// take it in place of a bool.
func jsonOut(asJSON bool, out *outputFlags) *outputFlags {
	if asJSON {
		return out
	}
	return nil
}
