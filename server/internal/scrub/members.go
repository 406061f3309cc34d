package scrub

import (
	"bytes"
	"encoding/json"
)

// rewriteValid is rewriteObject for an obj that json.Valid accepts, without
// a json.Decoder: the decoder allocates an error for every value it ends
// (its scanner's look-ahead), some fifty per exec answer. It returns
// ok false when obj is not valid JSON or not an object, for rewriteObject
// to take the decoder's way (which also ignores what follows the object).
func rewriteValid(obj []byte, fn func(key string, val json.RawMessage) json.RawMessage) ([]byte, bool) {
	out := bytes.NewBuffer(make([]byte, 0, len(obj)+16))
	out.WriteByte('{')
	ok := eachMember(obj, func(key string, start, end int) {
		val := json.RawMessage(obj[start:end])
		if nv := fn(key, val); nv != nil {
			val = nv
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		writeKey(out, key)
		out.WriteByte(':')
		out.Write(val)
	})
	if !ok {
		return nil, false
	}
	out.WriteByte('}')
	return out.Bytes(), true
}

// eachMember walks obj, a JSON object, without a json.Decoder: it calls
// fn with each member's key, decoded, and the bounds of its value,
// obj[start:end], in order. It returns false, before any call, when obj
// is not valid JSON or not an object.
func eachMember(obj []byte, fn func(key string, start, end int)) bool {
	if !json.Valid(obj) {
		return false
	}
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	for obj[i] != '}' { // valid JSON: a member starts here
		end := stringEnd(obj, i)
		rawKey := obj[i:end]
		var key string
		if plainASCII(rawKey) {
			key = string(rawKey[1 : len(rawKey)-1])
		} else if err := json.Unmarshal(rawKey, &key); err != nil {
			return false // unreachable: a valid object's key is a valid string
		}
		i = skipSpace(obj, skipSpace(obj, end)+1) // past ':'
		vend := valueEnd(obj, i)
		fn(key, i, vend)
		i = skipSpace(obj, vend)
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return true
}

// writeKey writes key as json.Marshal would, without its allocation for
// a key of plain characters.
func writeKey(out *bytes.Buffer, key string) {
	for j := 0; j < len(key); j++ {
		if c := key[j]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			k, _ := json.Marshal(key)
			out.Write(k)
			return
		}
	}
	out.WriteByte('"')
	out.WriteString(key)
	out.WriteByte('"')
}

// plainASCII reports whether b holds only printable ASCII without a
// backslash: a string that decodes to itself.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd is the index just past the valid JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i = stringEnd(b, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// replaceMembers is rewriteValid for a caller that replaces few values:
// obj comes back as it is (no copy) when fn replaces nothing, else with
// only the replaced values spliced in, the rest of its bytes kept. ok is
// false when obj is not a valid JSON object.
func replaceMembers(obj []byte, fn func(key string, val json.RawMessage) json.RawMessage) (out []byte, ok bool) {
	var buf []byte // nil until a value is replaced
	done := 0      // obj[:done] is in buf
	ok = eachMember(obj, func(key string, start, end int) {
		if nv := fn(key, obj[start:end]); nv != nil {
			if buf == nil {
				buf = make([]byte, 0, len(obj)-(end-start)+len(nv))
			}
			buf = append(append(buf, obj[done:start]...), nv...)
			done = end
		}
	})
	if !ok {
		return nil, false
	}
	if buf == nil {
		return obj, true
	}
	return append(buf, obj[done:]...), true
}
