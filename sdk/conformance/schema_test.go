package conformance_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// validate checks a decoded JSON value against a schema of /openapi.json
// (the subset server/openapi.go writes: $ref, type, properties, required,
// items, additionalProperties, oneOf, enum) and returns what does not fit.
// An object's field that its schema does not list is a problem: the
// document is missing a field. In an answer (strict), required fields
// must be there; a request may leave them out.
func (r *recorder) validate(schema, v any, at string, strict bool) []string {
	var out []string
	r.walk(schema, v, at, strict, &out, 0)
	return out
}

func (r *recorder) walk(schema, v any, at string, strict bool, out *[]string, depth int) {
	s, _ := schema.(map[string]any)
	if s == nil || depth > 32 {
		return
	}
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		target := dig(r.doc, "components", "schemas", name)
		if target == nil {
			*out = append(*out, fmt.Sprintf("%s: $ref to missing schema %s", at, name))
			return
		}
		r.walk(target, v, at, strict, out, depth+1)
		return
	}
	if alts, ok := s["oneOf"].([]any); ok {
		for _, alt := range alts {
			var probe []string
			r.walk(alt, v, at, strict, &probe, depth+1)
			if len(probe) == 0 {
				return
			}
		}
		*out = append(*out, fmt.Sprintf("%s: %s fits none of oneOf", at, show(v)))
		return
	}
	if enum, ok := s["enum"].([]any); ok && v != nil && !slices.Contains(enum, v) {
		*out = append(*out, fmt.Sprintf("%s: %s is not one of the enum", at, show(v)))
	}
	typ, _ := s["type"].(string)
	if v == nil {
		return // a field left null (a nil pointer, slice or map): no value to check
	}
	if typ != "" && !fitsType(typ, v) {
		*out = append(*out, fmt.Sprintf("%s: %s is not of type %s", at, show(v), typ))
		return
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			r.walk(s["items"], e, fmt.Sprintf("%s[%d]", at, i), strict, out, depth+1)
		}
	case map[string]any:
		props, hasProps := s["properties"].(map[string]any)
		extra, hasExtra := s["additionalProperties"]
		for k, e := range x {
			switch {
			case hasProps && props[k] != nil:
				r.walk(props[k], e, at+"."+k, strict, out, depth+1)
			case hasExtra:
				r.walk(extra, e, at+"."+k, strict, out, depth+1)
			case hasProps:
				*out = append(*out, fmt.Sprintf("%s: field %q is not in /openapi.json's schema", at, k))
			}
		}
		if strict {
			req, _ := s["required"].([]any)
			for _, k := range req {
				if _, ok := x[k.(string)]; !ok {
					*out = append(*out, fmt.Sprintf("%s: required field %q is missing", at, k))
				}
			}
		}
	}
}

func fitsType(typ string, v any) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	return true
}

// TestRecorderFindsDrift: the recorder reports an answer's field the
// document lacks, a missing required field, a wrong type, an undocumented
// query parameter and status, a request field the schema lacks, and the
// operations no one called.
func TestRecorderFindsDrift(t *testing.T) {
	const doc = `{"paths": {
	  "/v1/things/{id}": {"get": {"parameters": [{"name": "full", "in": "query"}], "responses": {
	    "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
	    "default": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}}}}},
	  "/v1/things": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
	    "responses": {"201": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}},
	  "/v1/other": {"get": {"responses": {"200": {}}}}},
	 "components": {"schemas": {
	  "Thing": {"type": "object", "required": ["id", "size"], "properties": {"id": {"type": "string"}, "size": {"type": "integer"}}},
	  "ErrorEnvelope": {"type": "object", "properties": {"error": {"type": "object", "properties": {"code": {"type": "string", "enum": ["not_found"]}}}}}}}}`
	answers := map[string]string{
		"GET /v1/things/a":  `{"id": "a", "size": 1.5, "colour": "red"}`,
		"GET /v1/things/b":  `{"size": 2}`,
		"GET /v1/things/c":  `{"error": {"code": "gone"}}`,
		"POST /v1/things":   `{"id": "d", "size": 1}`,
		"GET /openapi.json": doc,
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/things/c":
			w.WriteHeader(http.StatusNotFound)
		case "/v1/things":
			w.WriteHeader(http.StatusOK) // documented: 201
		}
		_, _ = io.WriteString(w, answers[r.Method+" "+r.URL.Path])
	}))
	defer target.Close()
	rec := newRecorder(t, target.URL)
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/things/a?verbose=1", ""},
		{"GET", "/v1/things/b?full=1", ""},
		{"GET", "/v1/things/c", ""},
		{"POST", "/v1/things", `{"id": "d", "shape": "round"}`},
		{"GET", "/v1/nowhere", ""},
	} {
		r, err := http.NewRequest(req.method, rec.URL+req.path, strings.NewReader(req.body))
		if err != nil {
			t.Fatal(err)
		}
		if req.body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	ft := &fakeT{}
	rec.check(ft, "test", true)
	for _, want := range []string{
		`GET /v1/things/{id}: answer: field "colour" is not in /openapi.json's schema`,
		`GET /v1/things/{id}: answer.size: 1.5 is not of type integer`,
		`GET /v1/things/{id}: answer: required field "id" is missing`,
		`GET /v1/things/{id}: error.error.code: "gone" is not one of the enum`,
		`GET /v1/things/{id}: the SDK sends query parameter "verbose", which /openapi.json does not document`,
		`POST /v1/things: request: field "shape" is not in /openapi.json's schema`,
		`POST /v1/things answered 200, which /openapi.json does not document`,
		`GET /v1/nowhere is no operation of /openapi.json`,
		`no case calls GET /v1/other`,
	} {
		if !slices.ContainsFunc(ft.errs, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("the recorder did not report %q; it reported:\n%s", want, strings.Join(ft.errs, "\n"))
		}
	}
}

// fakeT collects a check's errors.
type fakeT struct {
	testing.TB
	errs []string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
