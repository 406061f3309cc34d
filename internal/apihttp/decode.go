package apihttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// DecodeJSON reads r's JSON body (see ReadJSON) into v. An empty body
// leaves v as is, so every field takes its default. Unknown fields are
// ignored, so newer clients work against older servers. A field of the
// wrong JSON type is a 422 validation_error naming the field.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	body, err := ReadJSON(w, r, limit)
	if err != nil || len(body) == 0 {
		return err
	}
	return Unmarshal(body, v)
}

// ReadJSON reads r's body, at most limit bytes, and checks that it is a
// JSON text a decoder would not alter. It returns nil for an empty body.
// Refusals: 415 for a Content-Type other than JSON (none at all is taken
// as JSON), 413 past limit, 408 when the body is too slow (BodyTimeouts),
// 400 for bytes that are not JSON, not UTF-8, or that escape a lone UTF-16
// surrogate (encoding/json would silently turn both into U+FFFD).
func ReadJSON(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, TooLarge(limit)
	}
	if r.ContentLength != 0 {
		if err := checkJSONType(r); err != nil {
			return nil, err
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, TooLarge(limit)
		}
		if ae, ok := errors.AsType[*api.Error](err); ok { // the body's deadline (BodyTimeouts)
			return nil, ae
		}
		return nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "read request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	if err := CheckJSONText(body); err != nil {
		return nil, err
	}
	return body, nil
}

// Unmarshal decodes a body ReadJSON accepted into v, with ReadJSON's
// errors: 400 for syntax, 422 for a field of the wrong type.
func Unmarshal(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		field := jsonField(reflect.TypeOf(v), te.Field)
		return api.Invalid(field, fmt.Sprintf("%s must be %s", field, jsonKind(te.Type.Kind())), "")
	}
	return badJSON(err)
}

// PathRequired is the answer to a file transfer without ?path=, the
// sidecar's and the control plane's alike.
func PathRequired() *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "query parameter path is required").
		WithHint("name the file or directory in the sandbox, e.g. ?path=/workspace/data.csv")
}

func badJSON(err error) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "request body is not valid JSON: %v", err).
		WithHint("send one JSON object with Content-Type: application/json")
}

// TooLarge is the 413 of a body over limit bytes. Text in a JSON body
// counts as JSON writes it (a newline is 2 bytes), so the hint says so.
func TooLarge(limit int64) *api.Error {
	return api.Errorf(http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge,
		"request body is larger than %s", sizeText(limit)).
		WithHint("send less (text in JSON counts escaped: a newline is 2 bytes); move large files with PUT …/files/raw or `boxkite files cp`, which stream")
}

// sizeText writes a byte count the way limits are documented.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkJSONType accepts application/json, any +json type, or no
// Content-Type at all.
func checkJSONType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return api.Errorf(http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType,
		"this route takes a JSON body, not %q", ct).
		WithHint("send Content-Type: application/json (curl: -H 'Content-Type: application/json')")
}

// CheckJSONText refuses body unless it is valid JSON whose strings decode
// unaltered: valid UTF-8 and no \u escape of a lone surrogate. Outside
// strings JSON is ASCII, so a whole-body UTF-8 check covers every string.
func CheckJSONText(body []byte) error {
	if !utf8.Valid(body) {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "request body is not valid UTF-8").
			WithHint("JSON text is UTF-8; send binary data base64-encoded, or as a file with PUT …/files/raw")
	}
	if !json.Valid(body) {
		var v any
		return badJSON(json.Unmarshal(body, &v))
	}
	if at := loneSurrogate(body); at >= 0 {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest,
			"request body escapes a lone UTF-16 surrogate at byte %d, which is not a character", at).
			WithHint("escape characters outside the BMP as a surrogate pair (\\ud83d\\ude00), or send them as UTF-8")
	}
	return nil
}

// loneSurrogate returns the offset of the first \u escape in a string of
// the valid JSON text b that is half of a surrogate pair without its
// other half, or -1.
func loneSurrogate(b []byte) int {
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			if b[i+1] != 'u' { // valid JSON: an escape always has its next byte
				i++
				continue
			}
			r := hex4(b[i+2 : i+6])
			switch {
			case !utf16.IsSurrogate(r):
			case r >= 0xDC00: // a low half with no high half before it
				return i
			case i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' && isLowSurrogate(hex4(b[i+8:i+12])):
				i += 6 // the pair's low half
			default:
				return i
			}
			i += 5
		}
	}
	return -1
}

func isLowSurrogate(r rune) bool { return r >= 0xDC00 && r <= 0xDFFF }

// hex4 decodes four hex digits (valid JSON guarantees them after \u).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// jsonField is the JSON name of a field path from json.UnmarshalTypeError,
// which names a field of an embedded struct after the struct's Go type
// ("ExecRequest.command"); the client only knows "command".
func jsonField(t reflect.Type, path string) string {
	for t != nil && (t.Kind() == reflect.Pointer) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return path
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if rest, ok := strings.CutPrefix(path, f.Name+"."); ok && f.Anonymous && f.Tag.Get("json") == "" {
			return jsonField(f.Type, rest)
		}
	}
	return path
}

// jsonKind names what a Go kind looks like in JSON, for error messages.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a different JSON type"
}
