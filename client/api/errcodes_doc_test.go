package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestErrorsDocListsEveryCode checks that docs/errors.md names every
// error code constant (Code… = "…") of this package and of the client,
// so a code added to the API is documented for the clients branching on it.
func TestErrorsDocListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{} // code → constant
	for _, dir := range []string{".", ".."} {
		for name, value := range codeConstants(t, dir) {
			codes[value] = name
		}
	}
	if len(codes) < 50 {
		t.Fatalf("found %d code constants, expected many more: is the parsing broken?", len(codes))
	}
	for code, name := range codes {
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("docs/errors.md does not list %s (%q): add it to its table of every code", name, code)
		}
	}
}

// codeConstants returns the string constants named Code… declared in
// the non-test Go files of dir.
func codeConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						out[id.Name] = v
					}
				}
			}
			return true
		})
	}
	return out
}
