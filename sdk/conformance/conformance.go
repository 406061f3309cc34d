// Package conformance holds the SDKs' shared conformance suite: the cases
// in cases.json (calls and the results they must give), and the matcher
// that checks what each SDK's runner reports. Its test starts a real
// control plane and runs the Go client and the TypeScript, Python and Rust
// SDKs' runners against it, so the four clients cannot drift apart.
//
// A case names a call ("sandboxes.create", "files.upload", …), its args,
// and either expect (a pattern of the result) or expect_error (a pattern
// of the error: code, message, hint, status, request_id). A string arg
// "${case.path}" is replaced by that part of an earlier case's result.
// Patterns match as JSON: an object matches when each of its keys does
// (other keys of the result are ignored), an array when it has the same
// length and each element matches, a scalar when equal; objects with one
// "$" key are matchers (see Match).
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Case is one call of the suite.
type Case struct {
	Name   string         `json:"name"`
	Call   string         `json:"call"`
	Server string         `json:"server,omitempty"` // "" or "main"; "old" (too old a version), "flaky" (429 first), "html" (not boxkite)
	Args   map[string]any `json:"args,omitempty"`
	// Expect is a pattern of the result; a case without ExpectError
	// expects a result (null for calls that answer nothing).
	Expect      any `json:"expect"`
	ExpectError any `json:"expect_error,omitempty"`
	// MinElapsedMS is the least time the call must have taken (a retry
	// after Retry-After).
	MinElapsedMS int64 `json:"min_elapsed_ms,omitempty"`
	// Skip names the runners that leave the case out, with why.
	Skip map[string]string `json:"skip,omitempty"`
}

// Suite is cases.json.
type Suite struct {
	Description string `json:"description"`
	Cases       []Case `json:"cases"`
}

// Load reads a suite.
func Load(path string) (*Suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load conformance suite: %w", err)
	}
	var s Suite
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("load conformance suite %s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, c := range s.Cases {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("load conformance suite %s: case name %q is empty or repeated", path, c.Name)
		}
		seen[c.Name] = true
	}
	return &s, nil
}

// Outcome is what a runner reports for one case: one JSON line.
type Outcome struct {
	Name      string         `json:"name"`
	Result    any            `json:"result"`
	Error     map[string]any `json:"error,omitempty"`
	ElapsedMS int64          `json:"elapsed_ms"`
}

// refPattern is a whole-string reference to an earlier result.
var refPattern = regexp.MustCompile(`^\$\{([^}]+)\}$`)

// Lookup finds a dotted path ("create.id", "log.entries.0.id") in the
// results saved so far, by case name.
func Lookup(saved map[string]any, path string) (any, error) {
	var cur any = saved
	for part := range strings.SplitSeq(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[part]
			if !ok {
				return nil, fmt.Errorf("no %q in %s", part, path)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("no index %q in %s", part, path)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("cannot index %T with %q in %s", cur, part, path)
		}
	}
	return cur, nil
}

// Resolve replaces "${case.path}" strings in v by the saved values.
func Resolve(v any, saved map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		if m := refPattern.FindStringSubmatch(x); m != nil {
			return Lookup(saved, m[1])
		}
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := Resolve(e, saved)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := Resolve(e, saved)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}

// Matcher checks a "$name" matcher's argument against a value; Match
// passes its own extras (such as "$go_tools") through Extra.
type Matcher func(arg, got any) error

// Match checks got (decoded JSON) against the pattern want. Matchers, each
// an object with one key:
//
//	{"$type": "string"|"number"|"boolean"|"array"|"object"|"null"}
//	{"$regex": "…"}          a string matching the expression
//	{"$contains": P}         an array with an element matching P, or a string containing P
//	{"$last": P}             an array whose last element matches P
//	{"$len": n}, {"$minlen": n}  an array's or string's length
//	{"$gte": n}              a number at least n
//	{"$nonempty": true}      a string, array or object that is not empty
//	{"$all": [P, …]}         every pattern matches
//	{"$ref": "case.path"}    equal to that part of an earlier result
//
// extra adds matchers (the test's "$go_tools").
func Match(want, got any, saved map[string]any, extra map[string]Matcher) error {
	m := matcher{saved: saved, extra: extra}
	return m.match("$", want, got)
}

type matcher struct {
	saved map[string]any
	extra map[string]Matcher
}

func (m matcher) match(at string, want, got any) error {
	switch w := want.(type) {
	case nil:
		if got != nil {
			return fmt.Errorf("%s: got %s, want null", at, show(got))
		}
		return nil
	case map[string]any:
		if len(w) == 1 {
			for k, arg := range w {
				if strings.HasPrefix(k, "$") {
					return m.special(at, k, arg, got)
				}
			}
		}
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an object", at, show(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := m.match(at+"."+k, w[k], g[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an array", at, show(got))
		}
		if len(g) != len(w) {
			return fmt.Errorf("%s: got %d elements %s, want %d", at, len(g), show(got), len(w))
		}
		for i := range w {
			if err := m.match(fmt.Sprintf("%s[%d]", at, i), w[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if !equalJSON(want, got) {
		return fmt.Errorf("%s: got %s, want %s", at, show(got), show(want))
	}
	return nil
}

func (m matcher) special(at, name string, arg, got any) error {
	switch name {
	case "$type":
		if typeOf(got) != arg {
			return fmt.Errorf("%s: got %s (%s), want a %v", at, show(got), typeOf(got), arg)
		}
	case "$regex":
		s, ok := got.(string)
		re, err := regexp.Compile(fmt.Sprint(arg))
		if err != nil {
			return fmt.Errorf("%s: bad $regex %v: %w", at, arg, err)
		}
		if !ok || !re.MatchString(s) {
			return fmt.Errorf("%s: got %s, want a string matching %v", at, show(got), arg)
		}
	case "$contains":
		switch g := got.(type) {
		case string:
			if s, ok := arg.(string); !ok || !strings.Contains(g, s) {
				return fmt.Errorf("%s: got %s, want it to contain %s", at, show(got), show(arg))
			}
		case []any:
			for i, e := range g {
				if m.match(fmt.Sprintf("%s[%d]", at, i), arg, e) == nil {
					return nil
				}
			}
			return fmt.Errorf("%s: no element of %s matches %s", at, show(got), show(arg))
		default:
			return fmt.Errorf("%s: got %s, want an array or string containing %s", at, show(got), show(arg))
		}
	case "$last":
		g, ok := got.([]any)
		if !ok || len(g) == 0 {
			return fmt.Errorf("%s: got %s, want a non-empty array", at, show(got))
		}
		return m.match(fmt.Sprintf("%s[last]", at), arg, g[len(g)-1])
	case "$len", "$minlen":
		n := -1
		switch g := got.(type) {
		case string:
			n = len(g)
		case []any:
			n = len(g)
		}
		want, _ := arg.(float64)
		if n < 0 || (name == "$len" && n != int(want)) || (name == "$minlen" && n < int(want)) {
			return fmt.Errorf("%s: got %s (length %d), want %s %v", at, show(got), n, name[1:], arg)
		}
	case "$gte":
		g, ok := got.(float64)
		w, _ := arg.(float64)
		if !ok || g < w {
			return fmt.Errorf("%s: got %s, want a number ≥ %v", at, show(got), arg)
		}
	case "$nonempty":
		empty := true
		switch g := got.(type) {
		case string:
			empty = g == ""
		case []any:
			empty = len(g) == 0
		case map[string]any:
			empty = len(g) == 0
		}
		if empty {
			return fmt.Errorf("%s: got %s, want something not empty", at, show(got))
		}
	case "$all":
		list, ok := arg.([]any)
		if !ok {
			return fmt.Errorf("%s: $all takes an array", at)
		}
		for _, p := range list {
			if err := m.match(at, p, got); err != nil {
				return err
			}
		}
	case "$ref":
		v, err := Lookup(m.saved, fmt.Sprint(arg))
		if err != nil {
			return fmt.Errorf("%s: $ref: %w", at, err)
		}
		if !equalJSON(v, got) {
			return fmt.Errorf("%s: got %s, want %s (%v)", at, show(got), show(v), arg)
		}
	default:
		if f, ok := m.extra[name]; ok {
			if err := f(arg, got); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			return nil
		}
		return fmt.Errorf("%s: unknown matcher %s", at, name)
	}
	return nil
}

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// equalJSON compares two decoded JSON values.
func equalJSON(a, b any) bool {
	return reflect.DeepEqual(a, b)
}

// show renders v for a failure message, cut to a readable length.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
