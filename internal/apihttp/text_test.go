package apihttp

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

type textBody struct {
	Label  string            `json:"label,omitempty"`
	Tags   []string          `json:"tags,omitempty"`
	Meta   map[string]string `json:"metadata,omitempty"`
	Nested *struct {
		Name string `json:"name"`
	} `json:"nested,omitempty"`
	Data   string `json:"data,omitempty" nul:"allow"`
	Any    any    `json:"any,omitempty"`
	NoTag  string
	Hidden string `json:"-"`
	inner         // embedded: its fields are the body's own
}

// TestCheckText: a NUL anywhere in a body's text is refused, 422 naming
// the field (a map's key by the map); a field tagged nul:"allow" may hold
// one; a body without one passes.
func TestCheckText(t *testing.T) {
	for _, tt := range []struct {
		body  string
		field string // "": accepted
		key   bool
	}{
		{`{"label":"ok","tags":["a","b"],"metadata":{"k":"v"},"nested":{"name":"n"},"any":[{"x":"y"}],"command":"c"}`, "", false},
		{`{"data":"a\u0000b"}`, "", false},
		{`{"label":"a\u0000b"}`, "label", false},
		{`{"tags":["a","\u0000"]}`, "tags[1]", false},
		{`{"metadata":{"k":"\u0000"}}`, "metadata.k", false},
		{`{"metadata":{"\u0000":"v"}}`, "metadata", true},
		{`{"nested":{"name":"\u0000"}}`, "nested.name", false},
		{`{"any":{"list":[1,"x\u0000"]}}`, "any.list[1]", false},
		{`{"any":{"k\u0000":1}}`, "any", true},
		{`{"command":"\u0000"}`, "command", false},
		{`{"NoTag":"\u0000"}`, "NoTag", false},
	} {
		var v textBody
		if err := json.Unmarshal([]byte(tt.body), &v); err != nil {
			t.Fatal(err)
		}
		v.Hidden = "\x00" // not in JSON: never the client's
		err := CheckText(&v)
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: %v, want it accepted", tt.body, err)
			}
			continue
		}
		ae, ok := errors.AsType[*api.Error](err)
		if !ok {
			t.Errorf("%s: %v, want a refusal of %s", tt.body, err, tt.field)
			continue
		}
		want := tt.field + " contains a NUL character (\\u0000)"
		if tt.key {
			want = tt.field + " has a key that contains a NUL character (\\u0000)"
		}
		details, _ := ae.Details.([]api.FieldError)
		if ae.Status != http.StatusUnprocessableEntity || ae.Code != api.CodeValidation || ae.Message != want || ae.Hint == "" ||
			len(details) != 1 || !slices.Equal(details[0].Loc, []string{"body", tt.field}) {
			t.Errorf("%s: %+v, want 422 %q with a hint, naming %s", tt.body, ae, want, tt.field)
		}
	}
}

// TestDecodeText: the decoder refuses what CheckText refuses, after the
// body's own checks.
func TestDecodeText(t *testing.T) {
	for _, tt := range []struct {
		body   string
		status int
	}{
		{`{"label":"ok"}`, 0},
		{`{"label":"a\u0000"}`, http.StatusUnprocessableEntity},
		{`{"label":"a`, http.StatusBadRequest},
		{"", 0},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
		var v textBody
		err := DecodeText(httptest.NewRecorder(), r, &v, 1<<10)
		status := 0
		if ae, ok := errors.AsType[*api.Error](err); ok {
			status = ae.Status
		} else if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if status != tt.status {
			t.Errorf("%s: %v, want status %d", tt.body, err, tt.status)
		}
	}
}

// FuzzCheckText: for any JSON body, CheckText refuses exactly the bodies
// with a NUL in a string that reaches a checked field, and never panics.
func FuzzCheckText(f *testing.F) {
	f.Add(`{"label":"a\u0000b"}`)
	f.Add(`{"metadata":{"\u0000":"v"},"tags":["x"]}`)
	f.Add(`{"any":[[{"a":"\u0000"}]],"data":"\u0000"}`)
	f.Add(`{"nested":null,"any":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		var v textBody
		if json.Unmarshal([]byte(body), &v) != nil {
			return
		}
		err := CheckText(&v)
		v.Data = ""
		b, _ := json.Marshal(v)
		if hasNUL := strings.Contains(string(b), `\u0000`); hasNUL != (err != nil) {
			t.Errorf("%q: CheckText = %v, but the checked fields hold a NUL: %v", body, err, hasNUL)
		}
	})
}

// TestCheckPathValues: an {id} with a NUL or a byte that is not UTF-8 is
// not found; a trailing {path...} is the sandbox's own business.
func TestCheckPathValues(t *testing.T) {
	mux := http.NewServeMux()
	var got error
	for _, p := range []string{"GET /v1/sandboxes/{id}", "GET /v1/sandboxes/{id}/lsp/{lsp_id}/x", "GET /preview/{port}/{path...}", "GET /v1/list/{$}"} {
		mux.HandleFunc(p, func(_ http.ResponseWriter, r *http.Request) { got = CheckPathValues(r) })
	}
	for _, tt := range []struct {
		path   string
		status int
	}{
		{"/v1/sandboxes/abc", 0},
		{"/v1/sandboxes/%00", http.StatusNotFound},
		{"/v1/sandboxes/a%FFb", http.StatusNotFound},
		{"/v1/sandboxes/abc/lsp/%C3%28/x", http.StatusNotFound},
		{"/v1/sandboxes/%C3%A9t%C3%A9", 0},
		{"/preview/8080/a%FF%00b", 0},
		{"/v1/list/", 0},
	} {
		got = nil
		mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", tt.path, nil))
		status := 0
		if ae, ok := errors.AsType[*api.Error](got); ok {
			status = ae.Status
			if ae.Code != api.CodeNotFound || ae.Hint == "" {
				t.Errorf("%s: %+v, want not_found with a hint", tt.path, ae)
			}
		}
		if status != tt.status {
			t.Errorf("%s: %v, want status %d", tt.path, got, tt.status)
		}
	}
}

func TestPatternWildcards(t *testing.T) {
	got := patternWildcards("POST /v1/sandboxes/{id}/lsp/{lsp_id}/files/{path...}/{$}")
	if diff := cmp.Diff([]string{"id", "lsp_id"}, got); diff != "" {
		t.Errorf("wildcards (-want +got):\n%s", diff)
	}
}

type hiddenMap struct {
	Env map[string]string `json:"env"`
}

// TestCheckTextEmbeddedMap: a map in an embedded struct of an unexported
// type is walked too (without reflect's Interface, which panics there).
func TestCheckTextEmbeddedMap(t *testing.T) {
	var v struct{ hiddenMap }
	if err := json.Unmarshal([]byte(`{"env":{"K":"\u0000"}}`), &v); err != nil {
		t.Fatal(err)
	}
	if ae, ok := errors.AsType[*api.Error](CheckText(&v)); !ok || !strings.HasPrefix(ae.Message, "env.K ") {
		t.Errorf("CheckText = %v, want env.K refused", ae)
	}
}
