package conformance_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/internal/testport"
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
// against `boxkite up` (acceptance 1 of issue 25): the binaries are built,
// `boxkite up` starts the local server in a fresh BOXKITE_HOME, and each
// quick start finds it through the local.toml that up wrote (no
// BOXKITE_BASE_URL or BOXKITE_API_KEY in its environment). The Python one
// runs from the wheel built with Debian's python3-build and installed into
// a venv with pip --no-index, the TypeScript one against the built
// package, the Rust one as a crate depending on sdk/rust.
func TestQuickStarts(t *testing.T) {
	home := boxkiteUp(t)
	c := localClient(t, home)
	for _, lang := range []string{"python", "js", "rust"} {
		t.Run(lang, func(t *testing.T) {
			var cmd *exec.Cmd
			switch lang {
			case "python":
				cmd = pythonQuickStart(t, quickStart(t, "python"))
			case "js":
				cmd = jsQuickStart(t, quickStart(t, "js"))
			case "rust":
				cmd = rustQuickStart(t, quickStart(t, "rust"))
			}
			if cmd.Env == nil {
				cmd.Env = os.Environ()
			}
			cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
				return strings.HasPrefix(kv, "BOXKITE_BASE_URL=") || strings.HasPrefix(kv, "BOXKITE_API_KEY=")
			})
			// The audit lines come from another thread (or task), so only
			// the lines, not their order, are checked; and one may land in
			// the middle of the command's output (between "2" and its
			// newline, when they came as two events), so they are taken
			// out before the output's lines are.
			out := bytesOf(runSubprocess(t, cmd, []string{"BOXKITE_HOME=" + home}))
			printed := map[string]bool{}
			for l := range strings.SplitSeq(string(auditLine.ReplaceAll(out, nil)), "\n") {
				printed[strings.TrimSpace(l)] = true
			}
			for _, want := range []string{"2", "exit code 0"} {
				if !printed[want] {
					t.Errorf("the %s quick start printed %q; want a line %q", lang, out, want)
				}
			}
			if !bytes.Contains(out, []byte("audit: exec\n")) {
				t.Errorf("the %s quick start printed %q; want a line %q", lang, out, "audit: exec")
			}
			sbs, err := c.ListSandboxes(t.Context(), true)
			if err != nil {
				t.Fatal(err)
			}
			if len(sbs) != 0 {
				t.Errorf("the %s quick start left %d active sandboxes; it deletes its own", lang, len(sbs))
			}
		})
	}
}

// auditLine is one line a quick start's audit follower prints.
var auditLine = regexp.MustCompile(`audit: [a-z_]+\n`)

// boxkiteUp builds boxkite and its companions (or takes them from
// BOXKITE_TEST_BINDIR when it has all four), runs `boxkite up` on a free
// port in a fresh BOXKITE_HOME, and `boxkite down` when the test ends. It
// returns the home.
func boxkiteUp(t *testing.T) string {
	t.Helper()
	names := []string{"boxkite", "boxkite-server", "boxkite-sidecar", "boxkite-bastion"}
	bin := os.Getenv("BOXKITE_TEST_BINDIR")
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(bin, n)); bin == "" || err != nil {
			bin = ""
			break
		}
	}
	if bin == "" {
		bin = t.TempDir()
		args := []string{"build", "-o", bin + string(filepath.Separator)}
		for _, n := range names {
			args = append(args, "./cmd/"+n)
		}
		build := exec.Command("go", args...)
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", strings.Join(names, " "), err, out)
		}
	}
	home := t.TempDir()
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "BOXKITE_") }),
		"BOXKITE_HOME="+home, "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	boxkite := func(args ...string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(bin, "boxkite"), args...)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	t.Cleanup(func() {
		if out, err := boxkite("down"); err != nil {
			t.Errorf("boxkite down: %v\n%s", err, out)
		}
	})
	// A port the kernel picked would be free only until the listen's
	// close: boxkite up binds it later, from another process.
	upOnFreePort(t, boxkite, testport.Pick)
	return home
}

// upOnFreePort runs `boxkite up --port P` with a port from pick. Another
// test may bind P between the pick and up (ports are picked by hand, see
// internal/testport): up refuses it as in use, and runs again on another.
func upOnFreePort(t *testing.T, boxkite func(args ...string) ([]byte, error), pick func() (int, error)) int {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port, err := pick()
		if err != nil {
			t.Fatal(err)
		}
		out, err := boxkite("up", "--port", strconv.Itoa(port))
		if err == nil {
			return port
		}
		if attempt == 5 || !strings.Contains(string(out), fmt.Sprintf("port %d on 127.0.0.1 is already in use", port)) {
			t.Fatalf("boxkite up: %v\n%s", err, out)
		}
		t.Logf("boxkite up: port %d is taken (another test's); trying another", port)
	}
}

// localClient is a Go client of the server `boxkite up` started in home,
// from the base_url and api_key of its local.toml.
func localClient(t *testing.T, home string) *client.Client {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "local.toml"))
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` = '([^']*)'$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("local.toml has no %s: %s", name, b)
		}
		return string(m[1])
	}
	return client.New(field("base_url"), field("api_key"))
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

// TestUpOnFreePortTaken: a picked port another test bound before `boxkite
// up` did (up refuses it as in use) is not the quick start's failure: up
// runs again on the next pick. The boxkite here answers as up does.
func TestUpOnFreePortTaken(t *testing.T) {
	picks := []int{20001, 20002}
	var ups []string
	boxkite := func(args ...string) ([]byte, error) {
		ups = append(ups, strings.Join(args, " "))
		if args[2] == "20001" {
			return []byte("error: port 20001 on 127.0.0.1 is already in use\nhint: pick another with --port\n"), errors.New("exit status 1")
		}
		return []byte("http://127.0.0.1:20002\n"), nil
	}
	pick := func() (int, error) { p := picks[0]; picks = picks[1:]; return p, nil }
	if port := upOnFreePort(t, boxkite, pick); port != 20002 {
		t.Errorf("up on port %d, want 20002", port)
	}
	if want := []string{"up --port 20001", "up --port 20002"}; !slices.Equal(ups, want) {
		t.Errorf("ups %q, want %q", ups, want)
	}
}
