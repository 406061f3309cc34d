package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// run_tests (reference §4.2, opt-in): run a test command and parse its
// results — pytest's output, `go test -json` and node's test runner (TAP)
// — into counts and failures with file and line; raw output otherwise.

const (
	runTestsDefaultTimeout = 300
	runTestsMaxTimeout     = 600
)

// TestFailure is one failed test.
type TestFailure struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

// TestReport is run_tests' answer.
type TestReport struct {
	Framework       string        `json:"framework"`
	Parsed          bool          `json:"parsed"`
	ExitCode        int           `json:"exit_code"`
	Passed          int           `json:"passed"`
	Failed          int           `json:"failed"`
	Errors          int           `json:"errors"`
	Failures        []TestFailure `json:"failures"`
	DurationSeconds float64       `json:"duration_seconds"`
	Output          string        `json:"output,omitempty"` // the raw output, when not parsed
}

func runTestsTool() Tool {
	return Tool{
		Name: "run_tests",
		Description: "Run a test command in the sandbox and return its results as JSON: passed, failed, errors and each failure " +
			"with file, line, test name and message. pytest, `go test` (run with -json) and node's test runner (`node --test`) are parsed; " +
			"other output comes back raw with parsed: false.",
		Schema: object(
			strParam("command", "The test command, e.g. `python3 -m pytest -q tests/`, `go test ./...` or `node --test`.").req(),
			strParam("framework", "pytest, go or node; detected from the command and output when left out.").oneOf("pytest", "go", "node", "auto"),
			intParam("timeout", "Seconds before the run is stopped (default 300, max 600).", runTestsDefaultTimeout, 1, runTestsMaxTimeout),
		),
		Handler: runRunTests,
	}
}

var goTestRE = regexp.MustCompile(`(^|[;&|(\s/])go\s+test(\s|$)`)

func runRunTests(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Command   string `json:"command"`
		Framework string `json:"framework"`
		Timeout   int    `json:"timeout"`
	}{Timeout: runTestsDefaultTimeout}
	if msg := decode("run_tests", args, &in); msg != "" {
		return msg, nil
	}
	if strings.TrimSpace(in.Command) == "" {
		return "Error: command must not be empty", nil
	}
	if msg := checkSeconds("timeout", float64(in.Timeout), 1, runTestsMaxTimeout, runTestsDefaultTimeout); msg != "" {
		return msg, nil
	}
	fw := in.Framework
	if fw == "" || fw == "auto" {
		fw = detectFramework(in.Command, "")
	}
	timeout := in.Timeout
	res, err := sb.Exec(ctx, api.ExecRequest{Command: goTestFlags(in.Command, fw, "-json", "-fullpath"), Timeout: timeout})
	if err == nil && fw == "go" && strings.Contains(res.Stderr+res.Stdout, "flag provided but not defined: -fullpath") {
		// A Go older than 1.21: file names without their directories.
		res, err = sb.Exec(ctx, api.ExecRequest{Command: goTestFlags(in.Command, fw, "-json"), Timeout: timeout})
	}
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if fw == "" {
		fw = detectFramework(in.Command, res.Stdout)
	}
	rep := ParseTestOutput(fw, res.Stdout, res.Stderr)
	rep.ExitCode = res.ExitCode
	if rep.DurationSeconds == 0 {
		rep.DurationSeconds = float64(res.DurationMS) / 1000
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	return Redact(string(b)), nil
}

// goTestFlags adds to a go test command the flags it lacks: -json, so
// that each test's result and output are known, and -fullpath (Go 1.21),
// so a failure's file is a path, not a base name inside its package.
// Other frameworks' commands come back as they are.
func goTestFlags(cmd, fw string, flags ...string) string {
	if fw != "go" {
		return cmd
	}
	add := ""
	for _, f := range flags {
		if !strings.Contains(cmd, f) {
			add += " " + f
		}
	}
	if add == "" {
		return cmd
	}
	return goTestRE.ReplaceAllStringFunc(cmd, func(m string) string { return strings.TrimRight(m, " \t") + add + " " })
}

// detectFramework guesses the framework from the command, else its output.
func detectFramework(cmd, out string) string {
	switch {
	case strings.Contains(cmd, "pytest"):
		return "pytest"
	case goTestRE.MatchString(cmd):
		return "go"
	case strings.Contains(cmd, "node --test") || strings.Contains(cmd, "node  --test"):
		return "node"
	case strings.Contains(out, "TAP version"):
		return "node"
	case strings.Contains(out, `"Action":"`):
		return "go"
	case pytestSummaryRE.MatchString(out):
		return "pytest"
	}
	return ""
}

// ParseTestOutput parses a test run's output by framework ("pytest",
// "go", "node"); Parsed is false (and Output the raw text) when it finds
// no result in it.
func ParseTestOutput(framework, stdout, stderr string) TestReport {
	var rep TestReport
	switch framework {
	case "pytest":
		rep = parsePytest(stdout)
	case "go":
		rep = parseGoTest(stdout)
	case "node":
		rep = parseTAP(stdout)
	}
	rep.Framework = framework
	if rep.Failures == nil {
		rep.Failures = []TestFailure{}
	}
	if !rep.Parsed {
		rep.Output = combine(stdout, stderr)
	}
	return rep
}

var (
	// The last line of a pytest run: "=== 1 failed, 2 passed in 0.12s ===",
	// without the rules under -q.
	pytestSummaryRE = regexp.MustCompile(`(?m)^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|rerun)(?:, )?)+|no tests ran) in ([0-9.]+)s(?: \([^)]*\))?\s*=*\s*$`)
	pytestCountRE   = regexp.MustCompile(`(\d+) (passed|failed|errors?)`)
	pytestHeadRE    = regexp.MustCompile(`^_{3,} (.+?) _{3,}$`)
	pytestWhereRE   = regexp.MustCompile(`^(\S+\.py):(\d+): (.*)$`)
	// A test id is a path and names without spaces, then the parameters
	// of a parametrized test in brackets, which may hold spaces and "::".
	pytestFailedRE = regexp.MustCompile(`^(FAILED|ERROR) (\S+?(?:\[.*?\])?)(?: - (.*))?$`)
)

func parsePytest(out string) TestReport {
	rep := TestReport{}
	m := pytestSummaryRE.FindAllStringSubmatch(out, -1)
	if m == nil {
		return rep
	}
	last := m[len(m)-1]
	rep.Parsed = true
	rep.DurationSeconds, _ = strconv.ParseFloat(last[2], 64)
	for _, c := range pytestCountRE.FindAllStringSubmatch(last[1], -1) {
		n, _ := strconv.Atoi(c[1])
		switch c[2] {
		case "passed":
			rep.Passed = n
		case "failed":
			rep.Failed = n
		default:
			rep.Errors = n
		}
	}
	// Each failure's section: a "____ name ____" head, then the traceback
	// ending in "path.py:LINE: ErrorType"; the short summary has the message.
	where := map[string]TestFailure{}
	var cur string
	var order []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if h := pytestHeadRE.FindStringSubmatch(line); h != nil && !strings.Contains(h[1], "summary") {
			cur = h[1]
			continue
		}
		if w := pytestWhereRE.FindStringSubmatch(line); w != nil && cur != "" {
			n, _ := strconv.Atoi(w[2])
			if _, seen := where[cur]; !seen {
				order = append(order, cur)
			}
			where[cur] = TestFailure{File: w[1], Line: n, Name: cur, Message: w[3]}
			continue
		}
		if f := pytestFailedRE.FindStringSubmatch(line); f != nil {
			id := f[2]
			// The parameters (in brackets) may hold "::" themselves.
			base, params := id, ""
			if i := strings.IndexByte(id, '['); i >= 0 {
				base, params = id[:i], id[i:]
			}
			file, name, _ := strings.Cut(base, "::")
			short := name
			if i := strings.LastIndex(name, "::"); i >= 0 {
				short = name[i+2:]
			}
			// The section's head names a test in a class Class.test.
			key := short + params
			tf, ok := where[key]
			if !ok {
				key = strings.ReplaceAll(name, "::", ".") + params
				tf, ok = where[key]
			}
			if !ok {
				tf = TestFailure{File: file}
			}
			tf.Name = id
			if f[3] != "" {
				tf.Message = f[3]
			}
			rep.Failures = append(rep.Failures, tf)
			delete(where, key)
		}
	}
	// Sections without a summary line (pytest -rN).
	for _, name := range order {
		if tf, ok := where[name]; ok {
			rep.Failures = append(rep.Failures, tf)
		}
	}
	return rep
}

// goEvent is one line of `go test -json` (test2json).
type goEvent struct {
	Action      string
	Package     string
	ImportPath  string // of build-output events
	Test        string
	Output      string
	Elapsed     float64
	FailedBuild string
}

var (
	goWhereRE = regexp.MustCompile(`^\s+(\S+\.go):(\d+): (.*)$`)
	goBuildRE = regexp.MustCompile(`^(\S+\.go):(\d+):(?:\d+:)? (.*)$`)
	goFrameRE = regexp.MustCompile(`^\t(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$`)
)

func parseGoTest(out string) TestReport {
	rep := TestReport{}
	outputs := map[string][]string{} // package/test → output lines
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var e goEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			continue
		}
		rep.Parsed = true
		key := e.Package + "/" + e.Test
		switch e.Action {
		case "build-output":
			outputs["build:"+e.ImportPath] = append(outputs["build:"+e.ImportPath], strings.TrimRight(e.Output, "\n"))
		case "output":
			outputs[key] = append(outputs[key], strings.TrimRight(e.Output, "\n"))
		case "pass":
			if e.Test != "" {
				rep.Passed++
			} else {
				rep.DurationSeconds += e.Elapsed
			}
		case "fail":
			if e.Test == "" {
				rep.DurationSeconds += e.Elapsed
				if !hasTestFailure(rep.Failures, e.Package) {
					// A package that failed without a failing test: a build
					// error (or a panic outside tests).
					rep.Errors++
					tf := TestFailure{Name: e.Package, Message: firstLines(outputs[key], 5)}
					if e.FailedBuild != "" {
						for _, l := range outputs["build:"+e.FailedBuild] {
							if w := goBuildRE.FindStringSubmatch(l); w != nil {
								tf.File, tf.Message = w[1], w[3]
								tf.Line, _ = strconv.Atoi(w[2])
								break
							}
						}
					}
					rep.Failures = append(rep.Failures, tf)
				}
				continue
			}
			tf := TestFailure{Name: e.Package + "." + e.Test}
			lines := outputs[key]
			for i, l := range lines {
				if w := goWhereRE.FindStringSubmatch(l); w != nil {
					tf.File, tf.Message = w[1], w[3]
					tf.Line, _ = strconv.Atoi(w[2])
					// A message of several lines: the next ones are
					// indented deeper than its first.
					indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
					for _, more := range lines[i+1:] {
						if !strings.HasPrefix(more, indent+"    ") {
							break
						}
						tf.Message += "\n" + strings.TrimSpace(more)
					}
					break
				}
			}
			if tf.File == "" {
				goPanic(&tf, e.Package, lines)
			}
			if tf.File == "" && slices.ContainsFunc(rep.Failures, func(f TestFailure) bool { return strings.HasPrefix(f.Name, tf.Name+"/") }) {
				// A test that failed only because its subtests did: they
				// are the failures.
				continue
			}
			rep.Failed++
			rep.Failures = append(rep.Failures, tf)
		}
	}
	return rep
}

// goPanic fills tf from a test that panicked: the message is the
// panic's, the file and line those of the deepest frame in the test's
// package (the function line names the package, the next its file).
func goPanic(tf *TestFailure, pkg string, lines []string) {
	for i, l := range lines {
		if tf.Message == "" && strings.HasPrefix(l, "panic: ") {
			tf.Message, _, _ = strings.Cut(l, " [recovered")
		}
		if tf.Message != "" && strings.HasPrefix(l, pkg+".") && i+1 < len(lines) {
			if f := goFrameRE.FindStringSubmatch(lines[i+1]); f != nil {
				tf.File = f[1]
				tf.Line, _ = strconv.Atoi(f[2])
				return
			}
		}
	}
}

func hasTestFailure(fs []TestFailure, pkg string) bool {
	for _, f := range fs {
		if strings.HasPrefix(f.Name, pkg+".") {
			return true
		}
	}
	return false
}

func firstLines(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

var (
	tapResultRE   = regexp.MustCompile(`^(\s*)(not ok|ok) \d+ - (.*?)(?: # (SKIP|TODO).*)?$`)
	tapSubtestRE  = regexp.MustCompile(`^(\s*)# Subtest: (.*)$`)
	tapCountRE    = regexp.MustCompile(`^# (pass|fail|duration_ms) ([0-9.]+)$`)
	tapLocationRE = regexp.MustCompile(`([^\s'()]+):(\d+):\d+`)
	// tapUnescape undoes TAP's escapes in a test's name.
	tapUnescape = strings.NewReplacer(`\#`, "#", `\\`, `\`)
)

// parseTAP parses node's test runner in its TAP form (its reporter when
// the output is not a terminal, as under exec). A failure is a test that
// failed itself, at any depth: a describe block (or a test) that failed
// only because subtests did (failureType subtestsFailed) is not one, its
// failing subtests are, named with their parents' names ("outer > inner").
// A failure's file and line come from the first stack frame in a file of
// the test, else its location.
func parseTAP(out string) TestReport {
	rep := TestReport{}
	lines := strings.Split(out, "\n")
	var parents []string // the names of the subtests open at each depth
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if c := tapCountRE.FindStringSubmatch(line); c != nil {
			rep.Parsed = true
			f, _ := strconv.ParseFloat(c[2], 64)
			switch c[1] {
			case "pass":
				rep.Passed = int(f)
			case "fail":
				rep.Failed = int(f)
			case "duration_ms":
				rep.DurationSeconds = f / 1000
			}
			continue
		}
		if st := tapSubtestRE.FindStringSubmatch(line); st != nil {
			depth := len(st[1]) / 4
			parents = append(parents[:min(depth, len(parents))], tapUnescape.Replace(st[2]))
			continue
		}
		m := tapResultRE.FindStringSubmatch(line)
		if m == nil || m[2] != "not ok" {
			continue
		}
		depth := len(m[1]) / 4
		name := tapUnescape.Replace(m[3])
		if depth > 0 && depth <= len(parents) {
			name = strings.Join(append(slices.Clone(parents[:depth]), name), " > ")
		}
		tf, subtests := tapFailure(lines[i+1:], m[1])
		if subtests {
			continue
		}
		tf.Name = name
		rep.Failures = append(rep.Failures, tf)
	}
	if rep.Parsed && rep.Failed == 0 && len(rep.Failures) > 0 {
		rep.Failed = len(rep.Failures)
	}
	return rep
}

// tapFailure reads the YAML block of a failed result indented by indent
// (lines, from the one after the result): its message, file and line, and
// whether it failed only because subtests did.
func tapFailure(lines []string, indent string) (tf TestFailure, subtests bool) {
	block, text := indent+"  ", indent+"    "
	var location string
	inStack := false
	for j := 0; j < len(lines) && strings.HasPrefix(lines[j], block); j++ {
		l := strings.TrimSpace(lines[j])
		switch {
		case strings.HasPrefix(l, "failureType:"):
			subtests = strings.Contains(l, "subtestsFailed")
		case strings.HasPrefix(l, "location:"):
			location = l
		case strings.HasPrefix(l, "error:"):
			msg := strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, "error:")), "'\"")
			if msg == "|-" || msg == "|" || msg == ">-" {
				var parts []string
				for k := j + 1; k < len(lines) && strings.HasPrefix(lines[k], text); k++ {
					if s := strings.TrimSpace(lines[k]); s != "" {
						parts = append(parts, s)
					}
				}
				msg = strings.Join(parts, " ")
			}
			tf.Message = msg
		case strings.HasPrefix(l, "stack:"):
			inStack = true
		case inStack && tf.File == "":
			if loc := tapLocationRE.FindStringSubmatch(l); loc != nil && !strings.HasPrefix(loc[1], "node:") {
				tf.File = loc[1]
				tf.Line, _ = strconv.Atoi(loc[2])
			}
		}
	}
	if tf.File == "" {
		if loc := tapLocationRE.FindStringSubmatch(location); loc != nil {
			tf.File = loc[1]
			tf.Line, _ = strconv.Atoi(loc[2])
		}
	}
	return tf, subtests
}

// String renders a report for logs and tests.
func (r TestReport) String() string {
	return fmt.Sprintf("%s: %d passed, %d failed, %d errors", r.Framework, r.Passed, r.Failed, r.Errors)
}
