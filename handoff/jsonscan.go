package handoff

import (
	"bytes"
	"encoding/json"
)

// Session lines are edited in place: only the string values that change
// are re-encoded and spliced in, so key order, number spelling, escapes and
// every other byte stay as the tool wrote them (Claude Code's loader is
// reported to match byte patterns such as `{"type":"attribution-snapshot"`).
// The walker below assumes valid JSON; callers check with json.Valid first.

// stringEdit is asked about every string value (never keys) of a document:
// path holds the object keys leading to it, with "[]" for array elements.
// It returns the replacement and true to change the value.
type stringEdit func(path []string, s string) (string, bool)

// editStrings returns b with the string values edit changes replaced, or b
// itself when nothing changed. b must be valid JSON.
func editStrings(b []byte, edit stringEdit) []byte {
	w := walker{b: b, edit: edit}
	w.value(skipSpace(b, 0))
	if w.out == nil {
		return b
	}
	return append(w.out, b[w.last:]...)
}

// stringAt returns the string value at the key path in b (valid JSON), or
// false when there is none there or it is not a string.
func stringAt(b []byte, path ...string) (string, bool) {
	var got string
	found := false
	editStrings(b, func(p []string, s string) (string, bool) {
		if !found && equalPath(p, path) {
			got, found = s, true
		}
		return "", false
	})
	return got, found
}

func equalPath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && b[i] != "*" {
			return false
		}
	}
	return true
}

type walker struct {
	b    []byte
	edit stringEdit
	path []string
	out  []byte // nil until the first change
	last int    // b[:last] is already in out
}

// value walks the value starting at b[i] and returns the index after it.
func (w *walker) value(i int) int {
	if i >= len(w.b) {
		return i
	}
	switch w.b[i] {
	case '{':
		return w.object(i)
	case '[':
		return w.array(i)
	case '"':
		end := scanString(w.b, i)
		w.str(i, end)
		return end
	}
	for i < len(w.b) {
		switch w.b[i] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

func (w *walker) object(i int) int {
	i = skipSpace(w.b, i+1)
	for i < len(w.b) && w.b[i] != '}' {
		end := scanString(w.b, i)
		key := decodeString(w.b[i:end])
		i = skipSpace(w.b, end)
		i = skipSpace(w.b, i+1) // the colon
		w.path = append(w.path, key)
		i = skipSpace(w.b, w.value(i))
		w.path = w.path[:len(w.path)-1]
		if i < len(w.b) && w.b[i] == ',' {
			i = skipSpace(w.b, i+1)
		}
	}
	return i + 1
}

func (w *walker) array(i int) int {
	i = skipSpace(w.b, i+1)
	w.path = append(w.path, "[]")
	for i < len(w.b) && w.b[i] != ']' {
		i = skipSpace(w.b, w.value(i))
		if i < len(w.b) && w.b[i] == ',' {
			i = skipSpace(w.b, i+1)
		}
	}
	w.path = w.path[:len(w.path)-1]
	return i + 1
}

func (w *walker) str(start, end int) {
	s := decodeString(w.b[start:end])
	repl, ok := w.edit(w.path, s)
	if !ok || repl == s {
		return
	}
	if w.out == nil {
		w.out = make([]byte, 0, len(w.b)+len(repl))
	}
	w.out = append(w.out, w.b[w.last:start]...)
	w.out = append(w.out, encodeString(repl)...)
	w.last = end
}

// scanString returns the index after the string literal starting at b[i].
func scanString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// decodeString decodes a JSON string literal; the common case has no
// escapes and needs no decoder.
func decodeString(lit []byte) string {
	if len(lit) >= 2 && bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	_ = json.Unmarshal(lit, &s) // valid by the caller's check
	return s
}

// encodeString encodes s as a JSON string literal without HTML escaping,
// which json.Marshal would add (\u003c for <) to bytes the tool never wrote.
func encodeString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// rebase moves path p from under the directory from to under to: p equal
// to from, or p starting with from followed by a slash. Anything else
// (a sibling such as from+"-old", text merely mentioning the path) is left.
func rebase(p, from, to string) (string, bool) {
	if from == "" || from == "/" {
		return p, false
	}
	if p == from {
		return to, true
	}
	if len(p) > len(from) && p[len(from)] == '/' && p[:len(from)] == from {
		return to + p[len(from):], true
	}
	return p, false
}
