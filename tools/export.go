package tools

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Export formats. Each produces the JSON value of that API's tools field.
const (
	FormatOpenAI    = "openai"    // Chat Completions: [{"type":"function","function":{name,description,parameters}}]
	FormatAnthropic = "anthropic" // Messages: [{name,description,input_schema}]
	FormatGemini    = "gemini"    // [{"function_declarations":[{name,description,parameters}]}], OpenAPI-subset schemas
	FormatMCP       = "mcp"       // tools/list: [{name,description,inputSchema}]
)

// Formats lists the formats Export accepts.
func Formats() []string {
	return []string{FormatOpenAI, FormatAnthropic, FormatGemini, FormatMCP}
}

// Export renders ts for format as indented JSON ending in a newline.
func Export(ts []Tool, format string) ([]byte, error) {
	for _, t := range ts {
		if !json.Valid(t.Schema) {
			return nil, fmt.Errorf("export %s: tool %s has an invalid schema", format, t.Name)
		}
	}
	ts = fitSet(ts)
	var v any
	switch format {
	case FormatOpenAI:
		type function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		type tool struct {
			Type     string   `json:"type"`
			Function function `json:"function"`
		}
		out := make([]tool, len(ts))
		for i, t := range ts {
			out[i] = tool{"function", function{t.Name, t.Description, t.Schema}}
		}
		v = out
	case FormatAnthropic:
		type tool struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		out := make([]tool, len(ts))
		for i, t := range ts {
			out[i] = tool{t.Name, t.Description, t.Schema}
		}
		v = out
	case FormatMCP:
		type tool struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		out := make([]tool, len(ts))
		for i, t := range ts {
			out[i] = tool{t.Name, t.Description, t.Schema}
		}
		v = out
	case FormatGemini:
		decls, err := geminiDeclarations(ts)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", format, err)
		}
		v = []any{map[string]any{"function_declarations": decls}}
	default:
		return nil, fmt.Errorf("export: unknown format %q (want %s)", format, strings.Join(Formats(), ", "))
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", format, err)
	}
	return append(b, '\n'), nil
}

// geminiDeclaration is one Gemini FunctionDeclaration.
type geminiDeclaration struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  any    `json:"parameters,omitempty"`
}

func geminiDeclarations(ts []Tool) ([]geminiDeclaration, error) {
	out := make([]geminiDeclaration, len(ts))
	for i, t := range ts {
		var s any
		if err := json.Unmarshal(t.Schema, &s); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t.Name, err)
		}
		d := geminiDeclaration{Name: t.Name, Description: t.Description}
		// Gemini refuses an OBJECT without properties; a tool without
		// parameters leaves them out instead.
		if m, ok := s.(map[string]any); !ok || len(asMap(m["properties"])) > 0 {
			d.Parameters = geminiSchema(s)
		}
		out[i] = d
	}
	return out, nil
}

// geminiKey reports whether k is a Schema field of Gemini's OpenAPI 3.0
// subset that we emit; everything else (additionalProperties, $schema,
// default…) is dropped.
func geminiKey(k string) bool {
	switch k {
	case "type", "format", "description", "nullable", "enum", "items", "properties", "required",
		"minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern":
		return true
	}
	return false
}

// geminiSchema converts a JSON Schema to Gemini's subset: unknown keys
// dropped, type names upper-cased as in its Type enum, recursively.
func geminiSchema(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, val := range m {
		if !geminiKey(k) {
			continue
		}
		switch k {
		case "type":
			if s, ok := val.(string); ok {
				val = strings.ToUpper(s)
			}
		case "items":
			val = geminiSchema(val)
		case "properties":
			props := make(map[string]any, len(asMap(val)))
			for name, p := range asMap(val) {
				props[name] = geminiProperty(p)
			}
			val = props
		}
		out[k] = val
	}
	return out
}

// geminiProperty converts one parameter. Gemini refuses an OBJECT without
// properties anywhere in a declaration ("should be non-empty for OBJECT
// type"), so a free-form map (http_request's headers) becomes a STRING
// holding its JSON, which Tool.Call accepts for an object parameter.
func geminiProperty(v any) any {
	m := asMap(v)
	if m == nil || m["type"] != "object" || len(asMap(m["properties"])) > 0 {
		return geminiSchema(v)
	}
	desc, _ := m["description"].(string)
	return map[string]any{
		"type":        "STRING",
		"description": strings.TrimSpace(desc + ` Give it as a JSON object, e.g. {"name": "value"}.`),
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
