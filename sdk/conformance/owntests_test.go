package conformance_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSDKOwnTests runs each SDK's own test suite with a real control plane
// in BOXKITE_BASE_URL: Python's unittest (Debian's python3), the
// TypeScript package's node --test (its unit tests, and the adapters'
// tests against the real ai, @langchain/core and @openai/agents packages:
// acceptance 3), and cargo test for the Rust crate.
func TestSDKOwnTests(t *testing.T) {
	for _, sdk := range []string{"python", "typescript", "rust"} {
		t.Run(sdk, func(t *testing.T) {
			srv := startServers(t)
			var cmd *exec.Cmd
			switch sdk {
			case "python":
				dir := sdkDir(t, "python")
				cmd = exec.Command(pythonCmd(t), "-m", "unittest", "discover", "-s", "tests", "-v")
				cmd.Dir = dir
			case "typescript":
				dir := buildTypeScript(t)
				tests, err := filepath.Glob(filepath.Join(dir, "test", "*.test.mjs"))
				if err != nil || len(tests) == 0 {
					t.Fatalf("no tests in sdk/typescript/test: %v", err)
				}
				cmd = exec.Command("node", append([]string{"--test", "--test-reporter=spec"}, tests...)...)
				cmd.Dir = dir
			case "rust":
				cmd = exec.Command("cargo", append([]string{"test"}, cargoArgs(t)...)...)
				cmd.Dir = sdkDir(t, "rust")
				cmd.Env = rustEnv(os.Environ())
			}
			if cmd.Env == nil {
				cmd.Env = os.Environ()
			}
			cmd.Env = append(cmd.Env, srv.env()...)
			out, err := cmd.CombinedOutput()
			t.Logf("%s\n%s", strings.Join(cmd.Args, " "), out)
			if err != nil {
				t.Fatalf("%s tests failed: %v", sdk, err)
			}
		})
	}
}
