package boxkite_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackageDocs fails for any package of ours without a package doc comment.
func TestPackageDocs(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Doc}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, rest, _ := strings.Cut(line, "\t")
		name, doc, _ := strings.Cut(rest, "\t")
		if path == module {
			continue // this directory holds only these guard tests
		}
		if strings.TrimSpace(doc) == "" {
			t.Errorf("package %s has no doc comment", path)
			continue
		}
		if name != "main" && !strings.HasPrefix(doc, "Package "+name+" ") {
			t.Errorf("package %s doc should start %q, got %q", path, "Package "+name, doc)
		}
	}
}
