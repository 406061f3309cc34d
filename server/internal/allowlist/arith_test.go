package allowlist

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// arithRules allow the builtins that take variable names, and cat.
var arithRules = append(append([]api.CommandRule(nil), setterRules...),
	api.CommandRule{Command: "test"}, api.CommandRule{Command: "unset"}, api.CommandRule{Command: "wait"},
	api.CommandRule{Command: "let"}, api.CommandRule{Command: "mapfile"}, api.CommandRule{Command: "readarray"},
	api.CommandRule{Command: "getopts"}, api.CommandRule{Command: "local"}, api.CommandRule{Command: "typeset"},
	api.CommandRule{Command: "command"}, api.CommandRule{Command: "true"},
)

// arithSetup puts a subscript running ./run into x without writing "$("
// (which the allowlist refuses anywhere): the escapes leave
// x='b[$(./run)]'.
const arithSetup = `x=b[\$\(./run\)]; `

// arithSinks are commands that make bash evaluate x as arithmetic, and so
// run ./run (seccheck26: each ran under an allowlist of printf, read,
// test, declare, … before arith.go; an E2B command is bash's, and so is a
// /v1 exec's wherever /bin/sh is bash).
var arithSinks = []struct{ name, command string }{
	{"printf -v subscript", arithSetup + "printf -v 'a[x]' 1"},
	{"printf -v glued", arithSetup + "printf -va[x] 1"},
	{"printf -v computed", arithSetup + `n='a[x]'; printf -v "$n" 1`},
	{"printf computed -v", arithSetup + `o=-v; printf "$o" 'a[x]' 1`},
	{"read subscript", arithSetup + "read 'a[x]' < /dev/null"},
	{"read computed name", arithSetup + `n='a[x]'; read "$n" < /dev/null`},
	{"read in a pipeline", arithSetup + "echo hi | read 'a[x]'"},
	{"test -v", arithSetup + "test -v 'a[x]'"},
	{"test -v unquoted", arithSetup + `v='-v a[x]'; test $v`},
	{"test -v through command", arithSetup + "command test -v 'a[x]'"},
	{"declare subscript", arithSetup + "declare 'a[x]=1'"},
	{"declare -i", arithSetup + "declare -i y=x"},
	{"declare -i then assign", arithSetup + "declare -i y; y=x"},
	{"typeset -ai", arithSetup + "typeset -ai y=x"},
	{"declare -n", arithSetup + "declare -n r='a[x]'; r=1"},
	{"unset subscript", arithSetup + "a=1; unset 'a[x]'"},
	{"let", arithSetup + "let x"},
	{"mapfile -C", "echo hi > in; mapfile -C ./run -c 1 l < in"},
	{"RANDOM", arithSetup + "RANDOM=x"},
	{"SRANDOM", arithSetup + "SRANDOM=x"},
	{"OPTIND", arithSetup + "OPTIND=x"},
	{"export OPTIND", arithSetup + "export OPTIND=x"},
	{"descriptor into a subscript", arithSetup + "ls {a[x]}>/dev/null"},
	{"descriptor into a subscript, input", arithSetup + "cat {a[x]}</dev/null"},
}

// TestArithmeticSinks: each sink runs ./run under real bash (so the case
// is real, not a guess about bash), and the allowlist refuses it.
func TestArithmeticSinks(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to show the sinks run code: %v", err)
	}
	al, err := Compile(arithRules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range arithSinks {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "run"), []byte("#!/bin/sh\ntouch ran\necho 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bash, "-c", tt.command)
			cmd.Dir = dir
			out, _ := cmd.CombinedOutput()
			if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
				t.Errorf("bash -c %q did not run ./run: %s", tt.command, out)
			}
			err := al.Check(tt.command)
			ae, ok := errors.AsType[*api.Error](err)
			if !ok || ae.Code != api.CodeCommandNotAllowed {
				t.Errorf("Check(%q) = %v, want a command_not_allowed refusal", tt.command, err)
			}
		})
	}
}

// TestArithmeticNamesAllowed: the name-taking builtins' ordinary uses
// stay allowed.
func TestArithmeticNamesAllowed(t *testing.T) {
	al, err := Compile(arithRules)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{
		`printf '%s\n' "$x"`,
		`printf "Hello $name\n"`,
		`printf '[%s]\n' a`,
		`printf -v out '%s-%s' "$a" "$b"`,
		`printf -- '-v %s' "$x"`,
		`read -r line < f`,
		`read -rp "$prompt" answer`,
		`read -ra words < f`,
		`test -n "$x"`,
		`test "$a" = "$b"`,
		`test -v HOME`,
		`test "$x" -eq 1`,
		`declare -x FOO="$bar"`,
		`export FOO=$bar BAZ`,
		`local -r y=1`,
		`unset -v a b`,
		`mapfile -t lines < f`,
		`getopts ab opt`,
		`wait`,
		`x=b[\$\(./run\)]; echo "$x"`,
		`ls {a}>/dev/null`,
		`ls {a,b}[0-9] > out`,
	} {
		if err := al.Check(c); err != nil {
			t.Errorf("Check(%q) = %v, want allowed", c, err)
		}
	}
}

// TestArithmeticSinksShowRefusal: a refusal says what to do.
func TestArithmeticSinksShowRefusal(t *testing.T) {
	al, err := Compile(arithRules)
	if err != nil {
		t.Fatal(err)
	}
	ae, _ := errors.AsType[*api.Error](al.Check("printf -v 'a[x]' 1"))
	if ae == nil || !strings.Contains(ae.Message, "subscript") || ae.Details.(map[string]string)["program"] != "printf" {
		t.Errorf("refusal = %+v", ae)
	}
}
