package allowlist

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/boxkite/boxkite/client/api"
)

// FuzzAllowlistAgainstBash checks the allowlist's shell reader against an
// independent one (mvdan.cc/sh, which reads bash as bash does and POSIX sh
// as dash does): whatever the allowlist lets through under basicRules,
// neither reading may find a command that runs a program by path, runs a
// program the rules do not name, or sets a protected variable (issue 17,
// finding 6).
func FuzzAllowlistAgainstBash(f *testing.F) {
	for _, tt := range allowlistCases {
		f.Add(tt.command)
	}
	for _, c := range []string{
		"ls;./x", "ls&&/bin/rm", "ls\\\n/bin/rm", "ls|PATH=x cat", "FOO=1\tLD_PRELOAD=x ls",
		"{ PATH=/x ls; }", "if ls; then PATH=/x ls; fi", "ls # x\n./x", `l"s"`, `"./"ls`, `\./ls`,
		"while ls; do ./x; done", "! ./x", "ls 2>./x", "ls >&./x", "ls\r\n./x",
		"ls &>x ./y", "ls &>>x rm", "ls $'\\''; ./x #'", "ls $'\\'; ./x #\\''", "echo $'a\\tb'",
	} {
		f.Add(c)
	}
	al, err := Compile(basicRules)
	if err != nil {
		f.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range basicRules {
		listed[strings.ToLower(r.Command)] = true
	}
	bash := syntax.NewParser(syntax.Variant(syntax.LangBash))
	posix := syntax.NewParser(syntax.Variant(syntax.LangPOSIX))
	f.Fuzz(func(t *testing.T, command string) {
		if err := al.Check(command); err != nil {
			if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeCommandNotAllowed {
				t.Errorf("check(%q) = %v, want a command_not_allowed refusal", command, err)
			}
			return
		}
		if strings.ContainsRune(command, '\r') {
			return // mvdan.cc/sh reads a carriage return as a blank; bash does not
		}
		// /bin/sh may be bash or dash. mvdan.cc/sh's POSIX reading is
		// dash's, but it refuses "&>", which dash reads as "&" then ">".
		if file, err := bash.Parse(strings.NewReader(command), ""); err == nil {
			checkReading(t, "bash", command, file, listed)
		}
		if file, err := posix.Parse(strings.NewReader(strings.ReplaceAll(command, "&>", "& >")), ""); err == nil {
			checkReading(t, "dash", command, file, listed)
		}
	})
}

// checkReading fails t when the shell's reading (file) of an allowed
// command runs a program by path, runs a program basicRules (listed) do
// not name, or sets a protected variable.
func checkReading(t *testing.T, shell, command string, file *syntax.File, listed map[string]bool) {
	t.Helper()
	// Under /bin/sh as dash, time is GNU time, whose options come
	// before the program; the allowlist reads them so.
	timed := map[*syntax.CallExpr]bool{}
	syntax.Walk(file, func(n syntax.Node) bool {
		if tc, ok := n.(*syntax.TimeClause); ok && tc.Stmt != nil {
			if call, ok := tc.Stmt.Cmd.(*syntax.CallExpr); ok {
				timed[call] = true
			}
		}
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		for _, a := range call.Assigns {
			if a.Name != nil && protectedVar(a.Name.Value) {
				t.Errorf("check(%q) allowed an assignment to %s (as %s reads it)", command, a.Name.Value, shell)
			}
		}
		args := call.Args
		for timed[call] && len(args) > 0 && strings.HasPrefix(args[0].Lit(), "-") {
			args = args[1:]
		}
		if len(args) == 0 {
			return true
		}
		prog, static := literalWord(args[0])
		switch {
		case !static:
			t.Errorf("check(%q) allowed a computed program word %q (as %s reads it)", command, prog, shell)
		case strings.Contains(prog, "/"):
			t.Errorf("check(%q) allowed the program %q, named by path (as %s reads it)", command, prog, shell)
		case builtinWrappers[strings.ToLower(prog)]:
			// exec, command, builtin: their operand was checked as the program.
		case !listed[strings.ToLower(prog)] && !slices.Contains([]string{"{", "}", "!"}, prog):
			t.Errorf("check(%q) allowed the program %q, which basicRules do not list (as %s reads it)", command, prog, shell)
		}
		return true
	})
}

// literalWord is the word after quote removal, and whether nothing in it
// expands (parameters, substitutions, globs).
func literalWord(w *syntax.Word) (string, bool) {
	static := true
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob, *syntax.BraceExp:
			static = false
		case *syntax.SglQuoted:
			if n.Dollar {
				static = false
			}
			return false
		case *syntax.DblQuoted:
			for _, p := range n.Parts {
				if _, ok := p.(*syntax.Lit); !ok {
					static = false // an expansion inside the quotes
				}
			}
			return false // quoted glob characters are text
		case *syntax.Lit:
			if strings.ContainsAny(n.Value, "*?[{~") {
				static = false
			}
		}
		return true
	})
	fields, err := expand.Fields(nil, w)
	if err != nil || len(fields) != 1 {
		return w.Lit(), false
	}
	return fields[0], static
}
