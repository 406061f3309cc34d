package apihttp

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// CheckRequestText refuses a request whose query string or headers hold
// a NUL character or bytes that are not UTF-8 (a ?account_id=%00, a
// Last-Event-ID of Latin-1 bytes): no parameter of the API can use one,
// and PostgreSQL's text refuses them where SQLite keeps them, so the
// refusal is the same on every store and comes before anything is done,
// as CheckText's for a body. The answer is 422 validation_error naming
// the parameter, its details' loc ["query", name] or ["header", name]. A
// form body (OAuth's endpoints) is checked with CheckValues. A query
// string that does not parse is left to the handler, which reads it as
// url.Values would.
func CheckRequestText(r *http.Request) error {
	// Every request pays this (an exec's too: issue 27), so the usual
	// case costs no allocation: a query of printable ASCII without
	// escapes decodes to itself, and headers are walked in map order; only
	// a refusal sorts, so it always names the same one.
	if q := r.URL.RawQuery; !plainASCII(q) {
		if vs, err := url.ParseQuery(q); err == nil {
			if err := CheckValues("query", vs); err != nil {
				return err
			}
		}
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			if !isText(v) {
				return firstHeaderRefused(r.Header)
			}
		}
	}
	return nil
}

// plainASCII says s holds printable ASCII without the % of an escape.
func plainASCII(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			return false
		}
	}
	return true
}

// firstHeaderRefused is the refusal of the first header, by name, whose
// value is not text.
func firstHeaderRefused(h http.Header) error {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[name] {
			if !isText(v) {
				return textRefused("header", name)
			}
		}
	}
	return nil
}

// CheckValues is CheckRequestText for url.Values from where (query, or
// form for a form body): a name or value with a NUL character or bytes
// that are not UTF-8 is a 422 validation_error naming it.
func CheckValues(where string, vs url.Values) error {
	for _, name := range slices.Sorted(maps.Keys(vs)) {
		if !isText(name) {
			return textRefused(where, "")
		}
		for _, v := range vs[name] {
			if !isText(v) {
				return textRefused(where, name)
			}
		}
	}
	return nil
}

func isText(s string) bool { return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) }

// textRefused is the refusal of the parameter name of where (query, form,
// header); "" for a parameter whose name is what holds the bytes.
func textRefused(where, name string) *api.Error {
	what := where + " parameter " + name
	loc := []string{where, name}
	switch {
	case where == "header":
		what = "header " + name
	case name == "":
		what, loc = "a "+where+" parameter's name", []string{where}
	}
	msg := what + " holds a NUL character or bytes that are not UTF-8"
	return &api.Error{
		Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: msg,
		Hint:    "send it as UTF-8 text without NUL (percent-encode UTF-8 in a URL): no parameter of the API can hold other bytes",
		Details: []api.FieldError{{Loc: loc, Msg: msg, Type: "value_error"}},
	}
}
