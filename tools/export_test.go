package tools

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestExportGolden compares each format's export of All() with
// testdata/<format>.golden; go test ./tools -run TestExportGolden -update
// rewrites them.
func TestExportGolden(t *testing.T) {
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			got, err := Export(All(), format)
			if err != nil {
				t.Fatalf("Export(All(), %q): %v", format, err)
			}
			if !json.Valid(got) {
				t.Fatalf("Export(All(), %q) is not valid JSON", format)
			}
			path := filepath.Join("testdata", format+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Export(All(), %q) differs from %s; run go test ./tools -run TestExportGolden -update and review the diff", format, path)
			}
		})
	}
}

func TestExportShapes(t *testing.T) {
	ts := All()
	decode := func(format string) []map[string]any {
		t.Helper()
		b, err := Export(ts, format)
		if err != nil {
			t.Fatalf("Export(%q): %v", format, err)
		}
		var v []map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("Export(%q) is not a JSON array of objects: %v", format, err)
		}
		return v
	}
	keys := func(m map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		slices.Sort(k)
		return k
	}

	for _, c := range []struct {
		format, schemaKey string
		wantKeys          []string
	}{
		{FormatAnthropic, "input_schema", []string{"description", "input_schema", "name"}},
		{FormatMCP, "inputSchema", []string{"description", "inputSchema", "name"}},
	} {
		v := decode(c.format)
		if len(v) != len(ts) {
			t.Fatalf("%s: %d tools, want %d", c.format, len(v), len(ts))
		}
		for i, tool := range v {
			if !slices.Equal(keys(tool), c.wantKeys) || tool["name"] != ts[i].Name {
				t.Errorf("%s tool %d = keys %v name %v, want keys %v name %s", c.format, i, keys(tool), tool["name"], c.wantKeys, ts[i].Name)
			}
		}
	}

	for i, tool := range decode(FormatOpenAI) {
		fn, _ := tool["function"].(map[string]any)
		if tool["type"] != "function" || fn["name"] != ts[i].Name || fn["parameters"] == nil {
			t.Errorf("openai tool %d = %v, want type function and the function of %s", i, tool, ts[i].Name)
		}
	}

	gem := decode(FormatGemini)
	decls, _ := gem[0]["function_declarations"].([]any)
	if len(gem) != 1 || len(decls) != len(ts) {
		t.Fatalf("gemini = %d tool objects with %d declarations, want 1 with %d", len(gem), len(decls), len(ts))
	}
	b, _ := json.Marshal(decls)
	for _, k := range []string{`"additionalProperties":`, `"default":`, `"$schema":`, `"type":"object"`, `"type":"string"`} {
		if bytes.Contains(b, []byte(k)) {
			t.Errorf("gemini declarations contain %s, which Gemini's schema subset does not have", k)
		}
	}
	for _, d := range decls {
		d := d.(map[string]any)
		if d["name"] == "list_processes" && d["parameters"] != nil {
			t.Errorf("gemini list_processes has parameters %v; a tool without any must leave them out", d["parameters"])
		}
	}
	// Gemini refuses an OBJECT without properties at any depth: a
	// free-form map goes as a STRING of JSON, which the tool accepts.
	opt, err := Enabled([]string{"http_request"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Export(opt, FormatGemini)
	if err != nil {
		t.Fatal(err)
	}
	var hr []struct {
		Decls []struct {
			Parameters struct {
				Properties map[string]map[string]any `json:"properties"`
			} `json:"parameters"`
		} `json:"function_declarations"`
	}
	if err := json.Unmarshal(out, &hr); err != nil || len(hr) != 1 || len(hr[0].Decls) != 1 {
		t.Fatalf("gemini http_request: %v %s", err, out)
	}
	if h := hr[0].Decls[0].Parameters.Properties["headers"]; h["type"] != "STRING" || !strings.Contains(h["description"].(string), "JSON object") {
		t.Errorf("gemini http_request headers = %v, want a STRING that asks for a JSON object", h)
	}

	if _, err := Export(ts, "langchain"); err == nil || !strings.Contains(err.Error(), `unknown format "langchain"`) {
		t.Errorf("Export(langchain) error = %v, want unknown format", err)
	}
	bad := []Tool{{Name: "x", Schema: json.RawMessage("{")}}
	if _, err := Export(bad, FormatOpenAI); err == nil {
		t.Error("Export of an invalid schema succeeded")
	}
}

// TestSchemas checks every tool's schema: an object of typed, described
// properties, required ones among them, names that every provider accepts,
// and descriptions that say something.
func TestSchemas(t *testing.T) {
	nameRE := regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	for _, tool := range All() {
		t.Run(tool.Name, func(t *testing.T) {
			if !nameRE.MatchString(tool.Name) {
				t.Errorf("name %q does not match %s", tool.Name, nameRE)
			}
			if len(tool.Description) < 40 || strings.HasSuffix(tool.Description, " ") {
				t.Errorf("description %q is too short or ends in a space", tool.Description)
			}
			var s struct {
				Type                 string                     `json:"type"`
				Properties           map[string]json.RawMessage `json:"properties"`
				Required             []string                   `json:"required"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
			}
			if err := json.Unmarshal(tool.Schema, &s); err != nil {
				t.Fatalf("schema is not JSON: %v", err)
			}
			if s.Type != "object" || s.Properties == nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("schema = %s, want an object with properties and additionalProperties false", tool.Schema)
			}
			for _, r := range s.Required {
				if _, ok := s.Properties[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
			for name, raw := range s.Properties {
				var p propSchema
				if err := json.Unmarshal(raw, &p); err != nil {
					t.Fatalf("property %s: %v", name, err)
				}
				if !slices.Contains([]string{"string", "integer", "number", "boolean", "array"}, p.Type) || p.Description == "" {
					t.Errorf("property %s = %s, want a known type and a description", name, raw)
				}
				if p.Type == "array" && p.Items == nil {
					t.Errorf("array property %s has no items", name)
				}
				if p.Default != nil && checkValue(p, mustJSON(t, p.Default)) != "" {
					t.Errorf("property %s: default %v does not fit its own schema", name, p.Default)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReferenceParameters pins the parameter names, required sets and
// defaults of reference §4.1-§4.3 that agents and prompts depend on.
func TestReferenceParameters(t *testing.T) {
	want := map[string]string{
		"bash_tool":          "command* timeout=120",
		"python_interpreter": "code* timeout=30",
		"file_create":        "path* content*",
		"view":               "path* start_line=1 end_line=100",
		"str_replace":        "path* old_str* new_str*",
		"present_files":      "paths*",
		"ls":                 "path=/",
		"glob":               "pattern* path=/",
		"grep":               "pattern* path=/ glob max_matches=500",
		"start_process":      "command* description max_runtime_seconds=3600",
		"get_process_output": "process_id* since_offset=0",
		"send_process_input": "process_id* data*",
		"stop_process":       "process_id*",
		"list_processes":     "",
		"watch_directory":    "path=/ timeout_seconds=10",
		"git_clone":          "url* path=/workspace/repo branch depth token ssh_key",
		"git_status":         "path=/workspace",
		"git_add":            "path=/workspace files",
		"git_commit":         "message* path=/workspace author_name author_email",
		"git_push":           "path=/workspace remote=origin branch token ssh_key force=false",
		"git_pull":           "path=/workspace remote=origin branch token ssh_key",
		"git_branch":         "path=/workspace name",
		"git_checkout":       "path=/workspace ref= create=false",
		"lsp_start":          "language*",
		"lsp_completion":     "lsp_id* path* line* character*",
		"lsp_stop":           "lsp_id*",
	}
	for _, tool := range All() {
		got := paramSummary(t, tool.Schema)
		if got != want[tool.Name] {
			t.Errorf("%s parameters = %q, want %q", tool.Name, got, want[tool.Name])
		}
	}
}

// paramSummary renders a schema's properties in order as "name* name=default".
func paramSummary(t *testing.T, schema json.RawMessage) string {
	t.Helper()
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	// Walk "properties" with a decoder to keep the order.
	dec := json.NewDecoder(bytes.NewReader(schema))
	var parts []string
	depth := 0
	inProps := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
				if inProps && depth == 1 {
					inProps = false
				}
			}
		case string:
			if depth == 1 && v == "properties" {
				inProps = true
				continue
			}
			if inProps && depth == 2 {
				var p propSchema
				if err := dec.Decode(&p); err != nil {
					t.Fatal(err)
				}
				part := v
				if slices.Contains(s.Required, v) {
					part += "*"
				}
				if p.Default != nil {
					part += "=" + strings.Trim(string(mustJSON(t, p.Default)), `"`)
				}
				parts = append(parts, part)
			}
		}
	}
	return strings.Join(parts, " ")
}

// TestExportFitsBashToTheSet checks that bash_tool names start_process only
// in a set that has it: the SDKs export bash_tool with three file tools.
func TestExportFitsBashToTheSet(t *testing.T) {
	bashDesc := func(ts []Tool) string {
		out, err := Export(ts, FormatAnthropic)
		if err != nil {
			t.Fatal(err)
		}
		var got []struct{ Name, Description string }
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if g.Name == "bash_tool" {
				return g.Description
			}
		}
		t.Fatalf("no bash_tool in %s", out)
		return ""
	}
	if d := bashDesc(Default()); !strings.Contains(d, "use start_process") {
		t.Errorf("default set: bash_tool = %q, want it to name start_process", d)
	}
	var four []Tool
	for _, n := range []string{"bash_tool", "file_create", "view", "str_replace"} {
		tl, _ := Lookup(Default(), n)
		four = append(four, tl)
	}
	if d := bashDesc(four); strings.Contains(d, "start_process") || !strings.Contains(d, "nohup") {
		t.Errorf("set without start_process: bash_tool = %q, want the shell's background instead", d)
	}
	if d := bashDesc(Default()); !strings.Contains(d, "use start_process") {
		t.Errorf("fitting a subset changed the default set: %q", d)
	}
}
