package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// TestDocsCommandsParse: every boxkite command line in the shell blocks
// of README.md and docs/*.md names a command that exists and passes its
// flag and argument checks, as a newcomer who types it would find.
func TestDocsCommandsParse(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range append(docs, filepath.Join("..", "README.md")) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range shellBlockLines(string(src)) {
			for _, args := range exampleCalls(t, placeholder.ReplaceAllString(line, "X")) {
				n++
				if err := parseExample(args); err != nil {
					t.Errorf("%s: %q: %v", path, strings.TrimSpace(line), err)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("checked %d command lines in the docs, want the few hundred they have", n)
	}
}

// placeholder is a value the reader fills in, such as <sandbox-id>,
// which a shell would read as redirections.
var placeholder = regexp.MustCompile(`<[a-zA-Z][a-zA-Z0-9_-]*>`)

// shellBlockLines returns the commands of the ```sh and ```console blocks
// of a Markdown text, a "$ " prompt removed, continuation lines and
// quotes across lines joined.
func shellBlockLines(md string) []string {
	var out []string
	in, cont := false, ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			lang := strings.TrimPrefix(trimmed, "```")
			in = !in && (lang == "sh" || lang == "bash" || lang == "console" || lang == "shell")
			cont = ""
			continue
		}
		if !in {
			continue
		}
		line = strings.TrimPrefix(trimmed, "$ ")
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		if _, err := syntax.NewParser().Parse(strings.NewReader(cont+line), ""); err != nil && strings.Contains(err.Error(), "without closing") {
			cont += line + "\n"
			continue
		}
		out = append(out, cont+line)
		cont = ""
	}
	return out
}
