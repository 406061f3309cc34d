package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/boxkite/boxkite/server/servertest"
)

// TestTypeScriptTypesFresh checks the TypeScript SDK's API types against
// the server: sdk/typescript/openapi.json must be the /openapi.json a real
// server serves, and src/openapi.ts what the package's build (npm run
// build: scripts/generate.mjs, then tsc) generates from it. With -update
// it rewrites both.
func TestTypeScriptTypesFresh(t *testing.T) {
	dir := sdkDir(t, "typescript")
	_, err := exec.LookPath("node")
	need(t, "node", err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", "openapi-typescript"))
	need(t, "the TypeScript SDK's node_modules (npm ci in sdk/typescript)", err)

	srv := servertest.New(t)
	resp, err := http.Get(srv.BaseURL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var doc bytes.Buffer
	if err := json.Indent(&doc, served, "", "  "); err != nil {
		t.Fatal(err)
	}
	doc.WriteByte('\n')
	snapshot := filepath.Join(dir, "openapi.json")
	fresh(t, snapshot, doc.Bytes())

	// What the build generates from the snapshot (the served document when
	// -update just wrote it).
	tmp := t.TempDir()
	in, out := filepath.Join(tmp, "openapi.json"), filepath.Join(tmp, "openapi.ts")
	if err := os.WriteFile(in, doc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "scripts/generate.mjs", in, out)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	fresh(t, filepath.Join(dir, "src", "openapi.ts"), got)
}

// fresh fails when the committed file at path is not want; with -update
// it writes want there.
func fresh(t *testing.T, path string, want []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s is stale: run go test ./sdk/conformance -run TestTypeScriptTypesFresh -update", path)
	}
}
