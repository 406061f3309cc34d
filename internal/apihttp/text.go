package apihttp

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// NULAllowed is the struct tag (`nul:"allow"`) of a request field whose
// string carries data rather than text, which CheckText lets hold a NUL
// character: an exec's stdin, a secret's value, the body of a request sent
// with secrets. Such a field never reaches a text column.
const NULAllowed = "allow"

// DecodeText is DecodeJSON followed by CheckText: a body none of whose
// strings the database could not store. The control plane decodes every
// JSON body with it (server/internal/httpx, the E2B facade).
func DecodeText(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	if err := DecodeJSON(w, r, v, limit); err != nil {
		return err
	}
	return CheckText(v)
}

// CheckText refuses a decoded body v with a string, map key or value, or
// array item that holds a NUL character (U+0000): a 422 validation_error
// naming the field ("label", "metadata.owner", "egress_hosts[2]"). No
// free text of the API can use one, and PostgreSQL's text refuses it (a
// SQLite store would keep it), so the refusal is the same on every store
// and comes before anything is done. A field tagged `nul:"allow"`
// (NULAllowed) is not checked. JSON carries no invalid UTF-8 past ReadJSON,
// so NUL is the one character left to refuse.
func CheckText(v any) error {
	if field, key, ok := findNUL(reflect.ValueOf(v), ""); ok {
		return nulRefused(field, key)
	}
	return nil
}

func nulRefused(field string, key bool) *api.Error {
	if field == "" {
		field = "body"
	}
	msg := field + " contains a NUL character (\\u0000)"
	if key {
		msg = field + " has a key that contains a NUL character (\\u0000)"
	}
	return api.Invalid(field, msg, "remove the NUL character: no text of the API can hold U+0000")
}

// findNUL walks v for a string with a NUL byte and returns the JSON path
// of the first one, and whether it is a map key rather than a value.
func findNUL(v reflect.Value, path string) (field string, key, ok bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false, false
		}
		return findNUL(v.Elem(), path)
	case reflect.String:
		return path, false, strings.IndexByte(v.String(), 0) >= 0
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous || f.Tag.Get("nul") == NULAllowed {
				continue // an embedded struct of an unexported type still has its fields decoded
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			sub := path
			if !f.Anonymous || name != "" { // an embedded struct's fields are the body's own
				if name == "" {
					name = f.Name
				}
				sub = join(path, name)
			}
			if field, key, ok := findNUL(v.Field(i), sub); ok {
				return field, key, ok
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 { // []byte is base64 in JSON
			return "", false, false
		}
		for i := range v.Len() {
			if field, key, ok := findNUL(v.Index(i), path+"["+strconv.Itoa(i)+"]"); ok {
				return field, key, ok
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			for k.Kind() == reflect.Interface || k.Kind() == reflect.Pointer {
				k = k.Elem()
			}
			ks := fmt.Sprint(k) // the value k holds; Interface would panic on an unexported field's
			if k.Kind() == reflect.String && strings.IndexByte(k.String(), 0) >= 0 {
				return path, true, true
			}
			if field, key, ok := findNUL(it.Value(), join(path, ks)); ok {
				return field, key, ok
			}
		}
	}
	return "", false, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// CheckPathValues refuses a request whose path wildcards (the {id} of the
// route pattern r matched; not a trailing {path...}, which a sandbox's own
// server may read as it likes) hold a NUL byte or bytes that are not
// UTF-8: no id the API gives out does, and PostgreSQL's text cannot hold
// them, so a lookup would fail rather than find nothing. The answer is 404
// not_found, as for any other id that names nothing.
func CheckPathValues(r *http.Request) error {
	for _, name := range patternWildcards(r.Pattern) {
		if v := r.PathValue(name); strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
			return api.Errorf(http.StatusNotFound, api.CodeNotFound,
				"nothing has that %s: it holds a NUL byte or bytes that are not UTF-8, which no %s does", name, name).
				WithHint("use the " + name + " as the API returned it (its list route shows them)")
		}
	}
	return nil
}

// patternWildcards returns the names of pattern's single-segment wildcards
// ("GET /v1/sandboxes/{id}/files" → id).
func patternWildcards(pattern string) []string {
	var names []string
	for {
		_, rest, ok := strings.Cut(pattern, "{")
		if !ok {
			return names
		}
		name, after, ok := strings.Cut(rest, "}")
		if !ok {
			return names
		}
		if name != "$" && !strings.HasSuffix(name, "...") {
			names = append(names, name)
		}
		pattern = after
	}
}
