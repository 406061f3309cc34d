package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// param is one property of a tool's argument object. The helpers below
// build them; object turns a list into the tool's JSON Schema.
type param struct {
	name     string
	typ      string // string, integer, number, boolean, array (of items), object
	items    string // element type of an array
	desc     string
	required bool
	def      any
	min, max *float64
	enum     []string
}

func strParam(name, desc string) param { return param{name: name, typ: "string", desc: desc} }

func intParam(name, desc string, def, lo, hi int) param {
	l, h := float64(lo), float64(hi)
	return param{name: name, typ: "integer", desc: desc, def: def, min: &l, max: &h}
}

func numParam(name, desc string, def, lo, hi float64) param {
	return param{name: name, typ: "number", desc: desc, def: def, min: &lo, max: &hi}
}

func boolParam(name, desc string, def bool) param {
	return param{name: name, typ: "boolean", desc: desc, def: def}
}

func listParam(name, desc string) param {
	return param{name: name, typ: "array", items: "string", desc: desc}
}

func (p param) req() param              { p.required = true; return p }
func (p param) dflt(v any) param        { p.def = v; return p }
func (p param) oneOf(v ...string) param { p.enum = v; return p }
func (p param) noMax() param            { p.max = nil; return p }

// propSchema is the JSON Schema of one property, in a stable key order.
type propSchema struct {
	Type        string      `json:"type"`
	Description string      `json:"description,omitempty"`
	Enum        []string    `json:"enum,omitempty"`
	Items       *propSchema `json:"items,omitempty"`
	Default     any         `json:"default,omitempty"`
	Minimum     *float64    `json:"minimum,omitempty"`
	Maximum     *float64    `json:"maximum,omitempty"`
}

func (p param) schema() propSchema {
	s := propSchema{Type: p.typ, Description: p.desc, Enum: p.enum, Default: p.def, Minimum: p.min, Maximum: p.max}
	if p.items != "" {
		s.Items = &propSchema{Type: p.items}
	}
	return s
}

// object returns the JSON Schema of an argument object with ps as its
// properties, in their order (encoding/json would sort a map's keys; models
// read the order as a hint, so the important parameters come first).
func object(ps ...param) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		// Neither can fail: a string, and a struct of strings and numbers
		// (the defaults are finite literals of this package).
		k, _ := json.Marshal(p.name)
		v, _ := json.Marshal(p.schema())
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
		if p.required {
			required = append(required, p.name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		r, _ := json.Marshal(required)
		b.WriteString(`,"required":`)
		b.Write(r)
	}
	b.WriteString(`,"additionalProperties":false}`)
	return b.Bytes()
}

// objectSchema is what checkArgs reads of a tool's schema.
type objectSchema struct {
	Properties           map[string]propSchema `json:"properties"`
	Required             []string              `json:"required"`
	AdditionalProperties *bool                 `json:"additionalProperties"`
}

// checkArgs checks args against a tool's schema and returns the text telling
// the agent what is wrong, or "" when they fit: an object, no unknown
// parameters, every required one present and not null, every value of its
// type and enum. Numbers out of range are left to the handlers: a timeout
// is refused with its range and default (checkSeconds), a count such as
// grep's max_matches is clamped, as the reference does.
func checkArgs(tool string, schema, args json.RawMessage) string {
	var s objectSchema
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Sprintf("Error: %s has an invalid schema: %v", tool, err)
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(args, &got); err != nil || got == nil {
		return fmt.Sprintf("Error: the arguments of %s must be a JSON object", tool)
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	var unknown []string
	for k := range got {
		if _, ok := s.Properties[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 && (s.AdditionalProperties == nil || !*s.AdditionalProperties) {
		slices.Sort(unknown)
		if len(names) == 0 {
			return fmt.Sprintf("Error: %s takes no parameters; got %s", tool, quoteList(unknown))
		}
		return fmt.Sprintf("Error: %s has no parameter %s; its parameters are %s", tool, quoteList(unknown), strings.Join(names, ", "))
	}
	var missing []string
	for _, r := range s.Required {
		if v, ok := got[r]; !ok || isNull(v) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("Error: %s needs the parameter %s", tool, quoteList(missing))
	}
	for _, n := range names {
		v, ok := got[n]
		if !ok || isNull(v) {
			continue
		}
		if msg := checkValue(s.Properties[n], v); msg != "" {
			return fmt.Sprintf("Error: parameter %q of %s %s", n, tool, msg)
		}
	}
	return ""
}

// checkValue returns what is wrong with v for p ("must be an integer"), or "".
func checkValue(p propSchema, v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	ok := false
	switch p.Type {
	case "string":
		var s string
		ok = json.Unmarshal(v, &s) == nil
		if ok && len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return "must be one of " + strings.Join(p.Enum, ", ")
		}
	case "integer":
		_, ok = integerValue(v)
	case "number":
		var f float64
		ok = len(v) > 0 && v[0] != '"' && json.Unmarshal(v, &f) == nil
	case "boolean":
		ok = string(v) == "true" || string(v) == "false"
	case "object":
		ok = objectValue(v) != nil
	case "array":
		var items []json.RawMessage
		ok = json.Unmarshal(v, &items) == nil && items != nil
		if ok && p.Items != nil {
			for _, it := range items {
				if checkValue(*p.Items, it) != "" {
					return "must be an array of " + plural(p.Items.Type)
				}
			}
		}
	default:
		ok = true
	}
	if !ok {
		return "must be " + article(p.Type)
	}
	return ""
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// objectValue returns v as a JSON object, or nil when it is not one. A
// string holding a JSON object counts: Gemini's export gives free-form
// objects as such strings (geminiProperty).
func objectValue(v json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(v, &s) == nil {
		v = json.RawMessage(s)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil || m == nil {
		return nil
	}
	return bytes.TrimSpace(v)
}

// integerValue returns v as an integer: a JSON number with no fraction,
// 5 or 5.0 alike (JSON Schema's integer; clients that keep every number
// as a double, Gemini's among them, send 5.0).
func integerValue(v json.RawMessage) (int64, bool) {
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, true
	}
	if len(v) == 0 || v[0] == '"' {
		return 0, false
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// normalizeArgs returns args (already checked by checkArgs) in the one
// shape handlers decode: an integer given as 5.0 becomes 5 (also inside
// arrays of integers), and an object given as JSON text becomes the
// object (Gemini's export asks for free-form objects so: geminiProperty).
func normalizeArgs(schema, args json.RawMessage) json.RawMessage {
	var s objectSchema
	var got map[string]json.RawMessage
	if json.Unmarshal(schema, &s) != nil || json.Unmarshal(args, &got) != nil {
		return args
	}
	changed := false
	for n, p := range s.Properties {
		v, ok := got[n]
		if !ok || isNull(v) {
			continue
		}
		if nv := normalizeValue(p, bytes.TrimSpace(v)); nv != nil {
			got[n], changed = nv, true
		}
	}
	if !changed {
		return args
	}
	b, err := json.Marshal(got)
	if err != nil {
		return args
	}
	return b
}

// normalizeValue returns v in its plain shape for p, or nil when it has it.
func normalizeValue(p propSchema, v json.RawMessage) json.RawMessage {
	switch p.Type {
	case "integer":
		if n, ok := integerValue(v); ok && string(v) != strconv.FormatInt(n, 10) {
			return json.RawMessage(strconv.FormatInt(n, 10))
		}
	case "object":
		if bytes.HasPrefix(v, []byte(`"`)) {
			return objectValue(v)
		}
	case "array":
		var items []json.RawMessage
		if p.Items == nil || json.Unmarshal(v, &items) != nil {
			return nil
		}
		changed := false
		for i, it := range items {
			if nv := normalizeValue(*p.Items, bytes.TrimSpace(it)); nv != nil {
				items[i], changed = nv, true
			}
		}
		if changed {
			b, _ := json.Marshal(items) // raw messages that parsed
			return b
		}
	}
	return nil
}

func article(typ string) string {
	switch typ {
	case "integer", "array", "object":
		return "an " + typ
	}
	return "a " + typ
}

func plural(typ string) string {
	if typ == "" {
		return "values"
	}
	return typ + "s"
}

// quoteList renders names as "a" or "a", "b".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
