package conformance_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/boxkite/boxkite/server/servertest"
)

// TestTypeScriptTypesFresh generates the TypeScript SDK's API types from
// the /openapi.json a real server serves and fails when the committed
// src/openapi.ts differs; with -update it rewrites it.
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
	doc, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	in, out := filepath.Join(tmp, "openapi.json"), filepath.Join(tmp, "openapi.ts")
	if err := os.WriteFile(in, doc, 0o644); err != nil {
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
	committed := filepath.Join(dir, "src", "openapi.ts")
	if *update {
		if err := os.WriteFile(committed, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("sdk/typescript/src/openapi.ts is stale: run go test ./sdk/conformance -run TestTypeScriptTypesFresh -update")
	}
}
