package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// jsonFields lists the JSON field names of example's type, or of its
// items when it is a slice, in declaration order, with the JSON each one
// has when zero: a field that omitempty left out of an item is printed
// with that value when picked, so every picked field is always there.
// Types that are not structs have no fields.
func jsonFields(example any) ([]string, map[string]any) {
	t := reflect.TypeOf(example)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, nil
	}
	zero := map[string]any{}
	var names []string
	collectFields(t, func(name string, ft reflect.Type) {
		if _, dup := zero[name]; dup {
			return
		}
		names = append(names, name)
		zero[name] = zeroJSON(ft)
	})
	return names, zero
}

// collectFields calls add for each field encoding/json writes for t, with
// the fields of untagged embedded structs promoted as encoding/json does.
func collectFields(t reflect.Type, add func(string, reflect.Type)) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, add)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		add(name, f.Type)
	}
}

// zeroJSON is the generic JSON value of t's zero value.
func zeroJSON(t reflect.Type) any {
	b, err := json.Marshal(reflect.Zero(t).Interface())
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// pickFields keeps only fields of data's objects (data itself, or the
// items of a list of them).
func pickFields(data any, fields []string, zero map[string]any) any {
	switch d := data.(type) {
	case []any:
		out := make([]any, len(d))
		for i, item := range d {
			out[i] = pickFields(item, fields, zero)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(fields))
		for _, name := range fields {
			v, ok := d[name]
			if !ok {
				v = zero[name]
			}
			out[name] = v
		}
		return out
	}
	return data
}

// fieldName matches one name of --json FIELDS.
var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// isFieldList reports whether s looks like --json FIELDS: names separated
// by commas, with spaces around them or empty items allowed, as gh reads
// "number, title" and "id,label,".
func isFieldList(s string) bool {
	named := false
	for item := range strings.SplitSeq(s, ",") {
		switch item = strings.TrimSpace(item); {
		case item == "":
		case fieldName.MatchString(item):
			named = true
		default:
			return false
		}
	}
	return named
}

// joinJSONFields rewrites "--json FIELDS" as "--json=FIELDS" where the
// word after --json is meant as its fields, so that both spellings gh
// accepts work although a bare --json (every field) is valid too. The
// word is taken as fields when it looks like a field list and either
// names more than one field, names one of the command's fields, or
// could not be a positional argument of the command anyway. Anything
// else stays a positional argument ("session get --json build").
func joinJSONFields(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Annotations[annotationJSONFields] == "" {
		return args
	}
	fields := strings.Split(cmd.Annotations[annotationJSONFields], ",")
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--" {
			break
		}
		next := args[i+1]
		if args[i] != "--json" || !isFieldList(next) {
			continue
		}
		positional := cmd.Args == nil || cmd.Args(cmd, []string{next}) == nil
		if strings.Contains(next, ",") || slices.Contains(fields, next) || !positional {
			args = slices.Concat(args[:i], []string{"--json=" + next}, args[i+2:])
			continue
		}
		// Kept as an argument; should the command then have one too many,
		// usageArgs says it is an unknown field ('webhooks get ID --json
		// secret'), not that the command takes fewer arguments.
		cmd.Annotations[annotationJSONNext] = next
	}
	return args
}

// annotationJSONNext is the word after a bare --json that joinJSONFields
// left as an argument.
const annotationJSONNext = "boxkite:json-next"

// unknownFieldArg is, when the argument count v refused is one too many
// because of the word after a bare --json, the unknown-field error that
// word deserves; nil otherwise.
func unknownFieldArg(cmd *cobra.Command, v cobra.PositionalArgs, args []string) error {
	next := cmd.Annotations[annotationJSONNext]
	i := slices.Index(args, next)
	if next == "" || i < 0 || v(cmd, slices.Delete(slices.Clone(args), i, i+1)) != nil {
		return nil
	}
	fields := strings.ReplaceAll(cmd.Annotations[annotationJSONFields], ",", ", ")
	return usageErrorf("available fields: "+fields, "unknown JSON field %q", next)
}
