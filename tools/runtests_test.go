package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

func TestParseTestOutput(t *testing.T) {
	tests := []struct {
		file, framework string
		want            TestReport
	}{
		{"pytest.txt", "pytest", TestReport{Framework: "pytest", Parsed: true, Passed: 1, Failed: 1, Failures: []TestFailure{
			{File: "test_a.py", Line: 6, Name: "test_a.py::test_bad", Message: "AssertionError: x was wrong"},
		}}},
		{"pytest_q.txt", "pytest", TestReport{Framework: "pytest", Parsed: true, Passed: 1, Failed: 1, Failures: []TestFailure{
			{File: "test_a.py", Line: 6, Name: "test_a.py::test_bad", Message: "AssertionError: x was wrong"},
		}}},
		// A class's parametrized test and a pytest.raises that did not
		// raise, in pytest's default (not -q) output: one failure each.
		{"pytest_class.txt", "pytest", TestReport{Framework: "pytest", Parsed: true, Passed: 1, Failed: 2, Failures: []TestFailure{
			{File: "tests/test_calc.py", Line: 7, Name: "tests/test_calc.py::TestCalc::test_add[2-2-5]", Message: "assert (2 + 2) == 5"},
			{File: "tests/test_calc.py", Line: 10, Name: "tests/test_calc.py::TestCalc::test_div", Message: "Failed: DID NOT RAISE <class ..."},
		}}},
		// A parametrized test whose parameters hold a space and "::",
		// failing in a helper of another file.
		{"pytest_params.txt", "pytest", TestReport{Framework: "pytest", Parsed: true, Passed: 2, Failed: 3, Failures: []TestFailure{
			{File: "sub/helpers.py", Line: 2, Name: "sub/test_a.py::test_param[2]", Message: "AssertionError: x was 2"},
			{File: "sub/helpers.py", Line: 2, Name: "sub/test_a.py::test_param[a b::c]", Message: "AssertionError: x was 'a b::c'"},
			{File: "sub/test_a.py", Line: 8, Name: "sub/test_a.py::TestK::test_m", Message: "assert [1, 2] == [1, 3]"},
		}}},
		{"gotest.json", "go", TestReport{Framework: "go", Parsed: true, Passed: 1, Failed: 1, Failures: []TestFailure{
			{File: "ex_test.go", Line: 8, Name: "ex.TestBad", Message: "got 1, want 2"},
		}}},
		// go test -json -fullpath, a test in a package below the module's root.
		{"gotest_fullpath.json", "go", TestReport{Framework: "go", Parsed: true, Failed: 1, Failures: []TestFailure{
			{File: "/workspace/gomod/internal/calc/calc_test.go", Line: 7, Name: "example.com/calc/internal/calc.TestMul", Message: "Mul(3, 4) = 7, want 12"},
		}}},
		// A test that panics: the panic's message, the test's frame.
		{"gotest_panic.json", "go", TestReport{Framework: "go", Parsed: true, Failed: 1, Failures: []TestFailure{
			{File: "/workspace/gm/sub/a_test.go", Line: 18, Name: "ex/sub.TestPanic", Message: "panic: assignment to entry in nil map"},
		}}},
		// A failing subtest whose message has two lines: it is the failure,
		// not also its parent, which failed only because of it.
		{"gotest_subtests.json", "go", TestReport{Framework: "go", Parsed: true, Passed: 1, Failed: 1, Failures: []TestFailure{
			{File: "/workspace/gm/sub/a_test.go", Line: 14, Name: "ex/sub.TestTable/case_with_space/and::colons#01", Message: "x = 2\nsecond line"},
		}}},
		{"gobuild.json", "go", TestReport{Framework: "go", Parsed: true, Errors: 1, Failures: []TestFailure{
			{File: "./broken.go", Line: 3, Name: "ex", Message: "syntax error: unexpected {, expected )"},
		}}},
		{"node.tap", "node", TestReport{Framework: "node", Parsed: true, Passed: 1, Failed: 1, Failures: []TestFailure{
			{File: "/workspace/a.test.js", Line: 4, Name: "bad", Message: "Expected values to be strictly equal: 1 !== 2"},
		}}},
		// A failing test inside a describe block: the test is the failure,
		// not the block that failed because of it.
		{"node_describe.tap", "node", TestReport{Framework: "node", Parsed: true, Passed: 1, Failed: 1, Failures: []TestFailure{
			{File: "/workspace/nd/a.test.js", Line: 4, Name: "outer # not a directive > inner - with dash", Message: "Expected values to be strictly equal: 1 !== 2"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "runtests", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got := ParseTestOutput(tt.framework, string(b), "")
			got.DurationSeconds = 0
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if fw := detectFramework("make test", string(b)); fw != tt.framework {
				t.Errorf("detected %q from the output", fw)
			}
		})
	}
	if got := ParseTestOutput("", "some output", "err"); got.Parsed || got.Output != "some output\nerr" {
		t.Errorf("unknown framework: %+v", got)
	}
}

// runTestsFake answers exec with canned output and records the command.
type runTestsFake struct {
	fake
	cmds []string
	out  string
	code int
}

func (f *runTestsFake) Exec(_ context.Context, r api.ExecRequest) (*api.ExecResult, error) {
	f.cmds = append(f.cmds, r.Command)
	return &api.ExecResult{ExitCode: f.code, Stdout: f.out, DurationMS: 1500}, nil
}

func TestRunTestsTool(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join("testdata", "runtests", "gotest.json"))
	f := &runTestsFake{out: string(b), code: 1}
	text := runTestsTool().Call(t.Context(), f, json.RawMessage(`{"command":"cd /workspace/ex && go test ./..."}`))
	var rep TestReport
	if err := json.Unmarshal([]byte(text), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, text)
	}
	if rep.Framework != "go" || rep.ExitCode != 1 || rep.Failed != 1 || rep.Failures[0].Line != 8 {
		t.Errorf("report %+v", rep)
	}
	if len(f.cmds) != 1 || !strings.Contains(f.cmds[0], "go test -json -fullpath ./...") {
		t.Errorf("command %q", f.cmds)
	}
	f2 := &runTestsFake{out: "all good\n"}
	text = runTestsTool().Call(t.Context(), f2, json.RawMessage(`{"command":"make check"}`))
	if !strings.Contains(text, `"parsed": false`) || !strings.Contains(text, `"output": "all good"`) {
		t.Errorf("raw: %s", text)
	}
}

// FuzzParseTestOutput: no output makes a parser panic or invent failures
// without a name.
func FuzzParseTestOutput(f *testing.F) {
	for _, name := range []string{"pytest.txt", "pytest_q.txt", "gotest.json", "gobuild.json", "node.tap"} {
		b, _ := os.ReadFile(filepath.Join("testdata", "runtests", name))
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, out string) {
		for _, fw := range []string{"pytest", "go", "node"} {
			rep := ParseTestOutput(fw, out, "")
			for _, tf := range rep.Failures {
				if tf.Line < 0 {
					t.Fatalf("%s: negative line %+v", fw, tf)
				}
			}
		}
	})
}

func TestDetectFramework(t *testing.T) {
	for cmd, want := range map[string]string{
		"python3 -m pytest -q":                    "pytest",
		"cd x && /usr/local/go/bin/go test ./...": "go",
		"go test -run X .":                        "go",
		"cargo test; go  test":                    "go",
		"node --test":                             "node",
		"make test":                               "",
		"gotest":                                  "",
	} {
		if got := detectFramework(cmd, ""); got != want {
			t.Errorf("detectFramework(%q) = %q, want %q", cmd, got, want)
		}
	}
}

// oldGoFake is a Go older than 1.21: go test refuses -fullpath.
type oldGoFake struct {
	fake
	cmds []string
	out  string
}

func (f *oldGoFake) Exec(_ context.Context, r api.ExecRequest) (*api.ExecResult, error) {
	f.cmds = append(f.cmds, r.Command)
	if strings.Contains(r.Command, "-fullpath") {
		return &api.ExecResult{ExitCode: 2, Stderr: "flag provided but not defined: -fullpath\n"}, nil
	}
	return &api.ExecResult{ExitCode: 1, Stdout: f.out}, nil
}

// TestRunTestsOldGo: without -fullpath, go test runs again without it.
func TestRunTestsOldGo(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join("testdata", "runtests", "gotest.json"))
	f := &oldGoFake{out: string(b)}
	var rep TestReport
	text := runTestsTool().Call(t.Context(), f, json.RawMessage(`{"command":"go test ./..."}`))
	if err := json.Unmarshal([]byte(text), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, text)
	}
	want := []string{"go test -json -fullpath ./...", "go test -json ./..."}
	if diff := cmp.Diff(want, f.cmds); diff != "" || rep.Failed != 1 || rep.Failures[0].File != "ex_test.go" {
		t.Errorf("commands (-want +got):\n%s\nreport %+v", diff, rep)
	}
}
