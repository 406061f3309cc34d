package envd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestContextWorkingDirectories runs wrapped cells, as the interpreter
// does (one namespace, compiled as <input>), with python3: a context
// keeps its own working directory (where its os.chdir left it), and the
// default context and a context created without a cwd keep the
// interpreter's; a restarted context starts in its cwd again. A
// context's cwd was left as everyone's.
func TestContextWorkingDirectories(t *testing.T) {
	t.Parallel()
	start, dirA := realDir(t), realDir(t)
	if err := os.Mkdir(filepath.Join(dirA, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := codeContext{ID: "a", chdir: dirA}
	b := codeContext{ID: "b"}
	def := codeContext{ID: defaultContext}
	cells := []string{
		"import builtins, os\nbuiltins.seen = []",
		wrapCode(a, "import os\nos.chdir('sub')"),
		wrapCode(def, "seen.append(os.getcwd())"),
		wrapCode(b, "import os\nseen.append(os.getcwd())"),
		wrapCode(a, "import os\nseen.append(os.getcwd())"),
		dropCode("a"), // restartCodeContext: back to its cwd
		wrapCode(a, "import os\nseen.append(os.getcwd())"),
		"print('\\n'.join(seen))",
	}
	out := runCells(t, start, cells)
	want := strings.Join([]string{start, start, filepath.Join(dirA, "sub"), dirA}, "\n") + "\n"
	if out != want {
		t.Errorf("working directories (default, b, a, a restarted):\n%s\nwant\n%s", out, want)
	}
}

// runCells runs cells with python3 in dir, as the interpreter does (one
// namespace, each compiled as <input>), and returns what they printed.
func runCells(t *testing.T, dir string, cells []string) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3: %v", err) // the sidecar's interpreter tests need it too
	}
	cmd := exec.Command(python, "-c", "import json, sys\ng = {'__name__': '__main__'}\nfor cell in json.load(sys.stdin):\n    exec(compile(cell, '<input>', 'exec'), g)\n")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(pyList(cells))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	return string(out)
}

func pyList(cells []string) string {
	quoted := make([]string, len(cells))
	for i, c := range cells {
		quoted[i] = pyString(c)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// realDir is a new temporary directory as os.getcwd() names it (no
// symlink in its path).
func realDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestContextMissingCwd: a context created with a cwd that is not there
// (or is a file) runs its code in the interpreter's working directory, as
// E2B's does (its server sets the cwd with IPython's %cd, which prints the
// error and leaves the kernel where it started); every runCode in it was
// FileNotFoundError. Where the context's code then goes with os.chdir, it
// stays.
func TestContextMissingCwd(t *testing.T) {
	t.Parallel()
	start, other := realDir(t), realDir(t)
	file := filepath.Join(start, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := codeContext{ID: "m", chdir: filepath.Join(start, "nonexistent")}
	onFile := codeContext{ID: "f", chdir: file}
	cells := []string{
		"import builtins, os\nbuiltins.seen = []",
		wrapCode(missing, "import os\nseen.append(os.getcwd())\nos.chdir("+pyString(other)+")"),
		wrapCode(missing, "import os\nseen.append(os.getcwd())"),
		wrapCode(onFile, "import os\nseen.append(os.getcwd())"),
		"print('\\n'.join(seen))",
	}
	out := runCells(t, start, cells)
	want := strings.Join([]string{start, other, start}, "\n") + "\n"
	if out != want {
		t.Errorf("working directories (missing cwd, after its chdir, a file as cwd):\n%s\nwant\n%s", out, want)
	}
}

// TestIsPython: a language is read as E2B's server reads it, trimmed and
// in any case; " python" was refused 400 where E2B runs it.
func TestIsPython(t *testing.T) {
	t.Parallel()
	for lang, want := range map[string]bool{
		"python": true, "Python": true, "PYTHON3": true, " python ": true, "python\n": true,
		"": false, " ": false, "py": false, "javascript": false, "python 3": false, "pythonx": false,
	} {
		if got := isPython(lang); got != want {
			t.Errorf("isPython(%q) = %v, want %v", lang, got, want)
		}
	}
}
