package conformance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSDKFields: the SDKs' hand-written request options and typed records
// name every field of their /openapi.json schema (read from
// sdk/typescript/openapi.json, which TestTypeScriptTypesFresh keeps the
// server's), so a field the API gains is not silently missing from an SDK.
// Python's are the keyword arguments of a method; Rust's the fields of a
// struct (serde drops what a struct does not name); TypeScript's an
// options interface (most of its types come from the schema itself).
func TestSDKFields(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "typescript", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		schema string
		file   string // under sdk/
		anchor string // where the block starts; it ends at the first line matching end
		end    string
		skip   []string // fields taken elsewhere, with the reason in a comment
	}{
		// command is the method's first argument; count is create_many's.
		{"CreateSandboxRequest", "python/boxkite/client.py", `(?s)class Sandboxes:.*?def create\(`, `^\s*\) ->`, []string{"count"}},
		{"ExecRequest", "python/boxkite/sandbox.py", `def exec\(\s*self,\s*command`, `^\s*\) ->`, []string{"command"}},
		// The server refuses secret_env on a streamed exec.
		{"ExecRequest", "python/boxkite/sandbox.py", `def exec_stream\(`, `^\s*\) ->`, []string{"command", "secret_env"}},
		{"ProcessStartRequest", "python/boxkite/sandbox.py", `def start\(\s*self, command`, `\) ->`, []string{"command"}},
		{"ProcessStartRequest", "rust/src/sandbox.rs", `pub struct ProcessOptions \{`, `^\}`, []string{"command"}},
		{"CreateImageRequest", "python/boxkite/client.py", `class Images\(`, `^\s*\) -> dict:`, nil},
		{"CreateSecretRequest", "python/boxkite/client.py", `(?s)class Secrets\(.*?def create\(`, `^\s*\) -> dict:`, nil},
		{"HTTPRequest", "python/boxkite/sandbox.py", `def http_request\(`, `^\s*\) -> dict:`, nil},
		{"CreateSandboxRequest", "rust/src/lib.rs", `pub struct CreateSandbox \{`, `^\}`, []string{"count"}},
		{"Sandbox", "rust/src/lib.rs", `pub struct SandboxInfo \{`, `^\}`, nil},
		{"ExecResult", "rust/src/lib.rs", `pub struct ExecResult \{`, `^\}`, nil},
		{"LogEntry", "rust/src/lib.rs", `pub struct LogEntry \{`, `^\}`, nil},
		{"LogPage", "rust/src/lib.rs", `pub struct LogPage \{`, `^\}`, nil},
		{"ExecRequest", "rust/src/sandbox.rs", `pub struct ExecOptions \{`, `^\}`, []string{"command"}},
		{"ExecRequest", "typescript/src/sandbox.ts", `export interface ExecOptions \{`, `^\}`, []string{"command"}},
	} {
		t.Run(tc.schema+" in "+tc.file, func(t *testing.T) {
			props, _ := dig(doc, "components", "schemas", tc.schema, "properties").(map[string]any)
			if len(props) == 0 {
				t.Fatalf("no schema %s in openapi.json", tc.schema)
			}
			src, err := os.ReadFile(filepath.Join("..", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			block := codeBlock(t, string(src), tc.anchor, tc.end)
			for name := range props {
				if slices.Contains(tc.skip, name) {
					continue
				}
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(block) {
					t.Errorf("%s: %s lacks field %q of the API's %s", tc.file, strings.TrimSpace(strings.SplitN(block, "\n", 2)[0]), name, tc.schema)
				}
			}
		})
	}
}

// codeBlock is src from the first match of anchor to the first line after
// it matching end.
func codeBlock(t *testing.T, src, anchor, end string) string {
	t.Helper()
	loc := regexp.MustCompile(anchor).FindStringIndex(src)
	if loc == nil {
		t.Fatalf("no %q in the source", anchor)
	}
	endRe := regexp.MustCompile(end)
	lines := strings.SplitAfter(src[loc[0]:], "\n")
	for i, l := range lines {
		if i > 0 && endRe.MatchString(l) {
			return strings.Join(lines[:i+1], "")
		}
	}
	t.Fatalf("no end %q after %q", end, anchor)
	return ""
}
