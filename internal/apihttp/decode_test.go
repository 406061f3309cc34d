package apihttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

type inner struct {
	Command string `json:"command"`
}

type outer struct {
	inner
	Timeout *int `json:"timeout"`
	Env     map[string]string
}

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int // 0: accepted
		wantCode    string
		wantField   string
	}{
		{"plain", "application/json", `{"command":"ls"}`, 0, "", ""},
		{"charset", "application/json; charset=utf-8", `{"command":"ls"}`, 0, "", ""},
		{"+json type", "application/vnd.boxkite+json", `{"command":"ls"}`, 0, "", ""},
		{"no content type", "", `{"command":"ls"}`, 0, "", ""},
		{"empty body of any type", "text/plain", ``, 0, "", ""},
		{"surrogate pair", "application/json", `{"command":"echo \ud83d\ude00"}`, 0, "", ""},
		{"escaped backslash before u", "application/json", `{"command":"echo \\ud800"}`, 0, "", ""},
		{"unknown field", "application/json", `{"command":"ls","later":1}`, 0, "", ""},
		{"form type", "application/x-www-form-urlencoded", `{"command":"ls"}`, 415, api.CodeUnsupportedMediaType, ""},
		{"unparsable type", "json;;", `{"command":"ls"}`, 415, api.CodeUnsupportedMediaType, ""},
		{"not JSON", "application/json", `command=ls`, 400, api.CodeBadRequest, ""},
		{"trailing garbage", "application/json", `{"command":"ls"} x`, 400, api.CodeBadRequest, ""},
		{"invalid UTF-8", "application/json", "{\"command\":\"\xc3\x28\"}", 400, api.CodeBadRequest, ""},
		{"lone high surrogate", "application/json", `{"command":"\ud800"}`, 400, api.CodeBadRequest, ""},
		{"high surrogate then text", "application/json", `{"command":"\ud800abcdef"}`, 400, api.CodeBadRequest, ""},
		{"two high surrogates", "application/json", `{"command":"\ud800\ud800"}`, 400, api.CodeBadRequest, ""},
		{"lone low surrogate", "application/json", `{"command":"\uDC00"}`, 400, api.CodeBadRequest, ""},
		{"surrogate in a key", "application/json", `{"\udfff":1}`, 400, api.CodeBadRequest, ""},
		{"field of an embedded struct", "application/json", `{"command":5}`, 422, api.CodeValidation, "command"},
		{"pointer field", "application/json", `{"timeout":"5"}`, 422, api.CodeValidation, "timeout"},
		{"too large", "application/json", `{"command":"` + strings.Repeat("x", 100) + `"}`, 413, api.CodePayloadTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/exec", strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			var v outer
			err := DecodeJSON(httptest.NewRecorder(), r, &v, 64)
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tt.body != "" && v.Command == "" {
					t.Errorf("decoded nothing from %s", tt.body)
				}
				return
			}
			e, ok := err.(*api.Error)
			if !ok {
				t.Fatalf("error %v (%T), want an *api.Error", err, err)
			}
			if e.Status != tt.wantStatus || e.Code != tt.wantCode || e.Hint == "" {
				t.Errorf("got %d %s (hint %q), want %d %s and a hint", e.Status, e.Code, e.Hint, tt.wantStatus, tt.wantCode)
			}
			if tt.wantField != "" {
				fe, _ := e.Details.([]api.FieldError)
				if len(fe) != 1 || fe[0].Loc[1] != tt.wantField {
					t.Errorf("details %+v, want field %q", e.Details, tt.wantField)
				}
			}
		})
	}
}

// TestDeclaredTooLarge: a Content-Length past the limit is refused before
// any of the body is read.
func TestDeclaredTooLarge(t *testing.T) {
	r := httptest.NewRequest("POST", "/exec", strings.NewReader(`{}`))
	r.ContentLength = 1 << 30
	_, err := ReadJSON(httptest.NewRecorder(), r, 1<<20)
	if e, ok := err.(*api.Error); !ok || e.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("err = %v, want 413", err)
	}
}

// replacements counts U+FFFD in the strings of a decoded JSON value.
func replacements(v any) int {
	switch x := v.(type) {
	case string:
		return strings.Count(x, "\uFFFD")
	case []any:
		n := 0
		for _, e := range x {
			n += replacements(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range x {
			n += strings.Count(k, "\uFFFD") + replacements(e)
		}
		return n
	}
	return 0
}

// FuzzCheckJSONText: what CheckJSONText accepts, encoding/json decodes
// without inventing a U+FFFD the text did not spell, and what it refuses
// as a lone surrogate, encoding/json would indeed alter.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{
		`{"a":"b"}`, `"\ud800"`, `"\ud83d\ude00"`, `"\\ud800"`, `["\udc00",1]`, `{"\ud800x":2}`,
		"\"\xff\"", `"\ufffd"`, "\"\uFFFD\"", `"\ud800\u0041"`, `"\uD800\uDBFF\uDC00"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckJSONText(b)
		if !utf8.Valid(b) || !json.Valid(b) {
			if err == nil {
				t.Fatalf("accepted invalid text %q", b)
			}
			return
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			t.Fatalf("json.Valid but Unmarshal fails: %q", b)
		}
		spelled := bytes.Count(b, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(b), []byte(`\ufffd`))
		got := replacements(v)
		if err == nil && got > spelled {
			t.Fatalf("accepted %q, which decodes with %d U+FFFD for %d spelled", b, got, spelled)
		}
		if err != nil && got == 0 {
			t.Fatalf("refused %q (%v), which decodes unaltered", b, err)
		}
	})
}
