package conformance_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quickStart returns the first code block tagged lang in docs/sdks.md:
// each language's quick start.
func quickStart(t *testing.T, lang string) string {
	t.Helper()
	return firstBlock(t, filepath.Join("..", "..", "docs", "sdks.md"), lang)
}

// firstBlock returns the first code block tagged lang in a Markdown file.
func firstBlock(t *testing.T, path, lang string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n```" + lang + "\n(.*?)\n```\n").FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no ```%s block", path, lang)
	}
	return string(m[1]) + "\n"
}

// TestQuickStarts runs each SDK's quick start from docs/sdks.md, verbatim,
// against a real control plane (acceptance 1 of issue 25): the Python one
// from the wheel built with Debian's python3-build and installed into a
// venv with pip --no-index, the TypeScript one against the built package,
// the Rust one as a crate depending on sdk/rust.
func TestQuickStarts(t *testing.T) {
	for _, lang := range []string{"python", "js", "rust"} {
		t.Run(lang, func(t *testing.T) {
			srv := startServers(t)
			var cmd *exec.Cmd
			switch lang {
			case "python":
				cmd = pythonQuickStart(t, quickStart(t, "python"))
			case "js":
				cmd = jsQuickStart(t, quickStart(t, "js"))
			case "rust":
				cmd = rustQuickStart(t, quickStart(t, "rust"))
			}
			// The audit lines come from another thread, so only the
			// lines, not their order, are checked.
			lines := runSubprocess(t, cmd, srv.env())
			printed := map[string]bool{}
			for _, l := range lines {
				printed[strings.TrimSpace(string(l))] = true
			}
			for _, want := range []string{"2", "exit code 0", "audit: exec"} {
				if !printed[want] {
					t.Errorf("the %s quick start printed %q; want a line %q", lang, bytesOf(lines), want)
				}
			}
			sbs, err := srv.main.Store.ListSandboxes(t.Context(), srv.main.Account.ID, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(sbs) != 0 {
				t.Errorf("the %s quick start left %d active sandboxes; it deletes its own", lang, len(sbs))
			}
		})
	}
}

// TestReadmePython runs the README's Python example against a real
// control plane.
func TestReadmePython(t *testing.T) {
	srv := startServers(t)
	tmp := t.TempDir()
	script := filepath.Join(tmp, "readme.py")
	if err := os.WriteFile(script, []byte(firstBlock(t, filepath.Join("..", "..", "README.md"), "python")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pythonCmd(t), script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+sdkDir(t, "python"))
	out := bytesOf(runSubprocess(t, cmd, srv.env()))
	if string(out) != "2\n\n" {
		t.Errorf("the README's Python example printed %q, want %q", out, "2\n\n")
	}
}

func bytesOf(lines [][]byte) []byte {
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return b
}

// pythonQuickStart builds the wheel (python3 -m build --no-isolation, as
// Debian packages it), installs it into a fresh venv with pip --no-index
// (python3-pip),
// and returns the command that runs code with the venv's python.
func pythonQuickStart(t *testing.T, code string) *exec.Cmd {
	t.Helper()
	py := pythonCmd(t)
	dir := sdkDir(t, "python")
	tmp := t.TempDir()
	build := exec.Command(py, "-m", "build", "--wheel", "--no-isolation", "--outdir", filepath.Join(tmp, "dist"), dir)
	if out, err := build.CombinedOutput(); err != nil {
		need(t, "python3 -m build (apt-get install python3-build python3-setuptools python3-wheel)", err)
		t.Fatalf("build the wheel: %v\n%s", err, out)
	}
	wheels, _ := filepath.Glob(filepath.Join(tmp, "dist", "boxkite-*.whl"))
	if len(wheels) != 1 {
		t.Fatalf("the build made wheels %v, want one", wheels)
	}
	// A venv without pip of its own (making one with pip takes ~20 s on
	// CI's machine); the system's pip installs into it (--python, pip 22.3+).
	venv := filepath.Join(tmp, "venv")
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		need(t, "python3 -m venv (apt-get install python3-venv)", err)
		t.Fatalf("venv: %v\n%s", err, out)
	}
	install := exec.Command(py, "-m", "pip", "--python", filepath.Join(venv, "bin", "python"), "install", "--no-index", "--quiet", wheels[0])
	install.Env = append(os.Environ(), "PIP_FIND_LINKS=", "PIP_NO_INDEX=1")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("pip install --no-index %s: %v\n%s", wheels[0], err, out)
	}
	script := filepath.Join(tmp, "quickstart.py")
	if err := os.WriteFile(script, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), script)
	cmd.Dir = tmp // not sdk/python, so the import comes from the wheel
	return cmd
}

// jsQuickStart runs code as an ES module that imports "boxkite" from the
// built sdk/typescript, linked into its node_modules.
func jsQuickStart(t *testing.T, code string) *exec.Cmd {
	t.Helper()
	dir := buildTypeScript(t)
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(tmp, "node_modules", "boxkite")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(tmp, "quickstart.mjs")
	if err := os.WriteFile(script, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Dir = tmp
	return cmd
}

// rustQuickStart makes a crate whose main.rs is code and which depends on
// sdk/rust, and returns the command that runs it offline.
func rustQuickStart(t *testing.T, code string) *exec.Cmd {
	t.Helper()
	args := cargoArgs(t)
	tmp := t.TempDir()
	manifest := "[package]\nname = \"quickstart\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\nboxkite = { path = " +
		strconvQuote(sdkDir(t, "rust")) + " }\n"
	if err := os.MkdirAll(filepath.Join(tmp, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "Cargo.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "src", "main.rs"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("cargo", append(append([]string{"run"}, args...), "--manifest-path", filepath.Join(tmp, "Cargo.toml"))...)
	cmd.Dir = tmp
	cmd.Env = rustEnv(os.Environ())
	return cmd
}

func strconvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
