package apihttp

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestCheckRequestText: a query parameter (name or value) or a header
// with a NUL or bytes that are not UTF-8 is a 422 validation_error naming
// it; UTF-8 text, and a query string that does not parse (the handler's
// to read), pass.
func TestCheckRequestText(t *testing.T) {
	for _, tt := range []struct {
		name   string
		target string
		header map[string]string
		loc    []string // nil: no refusal
	}{
		{name: "text", target: "/x?account_id=acct-1&q=%C3%A9t%C3%A9", header: map[string]string{"Last-Event-ID": "été"}},
		{name: "NUL value", target: "/x?account_id=%00", loc: []string{"query", "account_id"}},
		{name: "not UTF-8 value", target: "/x?a=1&account_id=a%FFb", loc: []string{"query", "account_id"}},
		{name: "not UTF-8 name", target: "/x?%FF=1", loc: []string{"query"}},
		{name: "header not UTF-8", target: "/x", header: map[string]string{"Last-Event-ID": "\xe9"}, loc: []string{"header", "Last-Event-Id"}},
		{name: "header NUL", target: "/x", header: map[string]string{"Idempotency-Key": "a\x00"}, loc: []string{"header", "Idempotency-Key"}},
		{name: "query that does not parse", target: "/x?a=%zz"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.target, nil)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			err := CheckRequestText(r)
			if tt.loc == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *api.Error
			if !errors.As(err, &ae) {
				t.Fatalf("got %v, want an *api.Error", err)
			}
			details, _ := ae.Details.([]api.FieldError)
			if ae.Status != 422 || ae.Code != api.CodeValidation || ae.Hint == "" || len(details) != 1 {
				t.Fatalf("got %+v, want a 422 validation_error with a hint and one detail", ae)
			}
			if diff := cmp.Diff(tt.loc, details[0].Loc); diff != "" {
				t.Errorf("loc (-want +got):\n%s", diff)
			}
		})
	}
}
