package apihttp

import (
	"errors"
	"net/http/httptest"
	"net/url"
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
		{name: "plain query", target: "/x?limit=20&label=a+b&cursor=c_1-2.3~"},
		{name: "two bad headers name the first", target: "/x", header: map[string]string{"X-B": "\xff", "X-A": "\x00"}, loc: []string{"header", "X-A"}},
		{name: "escaped NUL among plain", target: "/x?limit=20&q=a%00", loc: []string{"query", "q"}},
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

// BenchmarkCheckRequestText: the check every API request pays, on an
// exec's request as the Go client sends it (no query, six headers) and on
// a listing's (a short query).
func BenchmarkCheckRequestText(b *testing.B) {
	for _, target := range []string{"/v1/sandboxes/sbx/exec", "/v1/sandboxes?limit=20&label=ci"} {
		r := httptest.NewRequest("POST", target, nil)
		for k, v := range map[string]string{
			"Authorization": "Bearer bxk_live_0123456789abcdef0123456789abcdef0123456", "Content-Type": "application/json",
			"User-Agent": "boxkite-go/1.0", "Accept-Encoding": "gzip", "Content-Length": "42", "X-Request-Id": "0123456789abcdef",
		} {
			r.Header.Set(k, v)
		}
		b.Run(target, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := CheckRequestText(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCheckRequestQuery: the check's shortcut for a plain query refuses
// exactly what decoding the query and checking each name and value does.
func FuzzCheckRequestQuery(f *testing.F) {
	for _, q := range []string{"", "limit=20", "a=%00", "a+b=c", "%FF=1", "a=%zz", "x=\x01", "k=é"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest("GET", "/x", nil)
		r.URL.RawQuery = q
		var want error
		if vs, err := url.ParseQuery(q); err == nil {
			want = CheckValues("query", vs)
		}
		if got := CheckRequestText(r); (got == nil) != (want == nil) {
			t.Fatalf("query %q: got %v, want %v", q, got, want)
		}
	})
}
