package allowlist

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Bash evaluates arithmetic in more places than $(( … )), and arithmetic
// evaluates the value of every variable it names as arithmetic in turn,
// subscripts included: with x='b[$(./run)]' (built without writing "$(":
// x=b[\$\(./run\)]), each of these runs ./run, a program the allowlist
// never saw:
//
//	printf -v 'a[x]' 1      read 'a[x]'      test -v 'a[x]'      declare 'a[x]=1'
//	unset 'a[x]'            wait -p 'a[x]'   let x               declare -i y=x
//	declare -n r='a[x]'     RANDOM=x         OPTIND=x            mapfile -C ./run
//
// posixExpansions refuses the expansions that evaluate ($[ ], ${A[X]},
// ${V:X}); checkNames refuses the builtins' forms: a variable name they
// take must be written out as a plain identifier (no subscript, nothing
// expanded), the integer and nameref attributes (-i, -n, -I) and mapfile's
// callback (-C) are refused, and let is always refused. The variables
// whose plain assignment is evaluated as arithmetic are protectedVars.

// maySubscript reports whether bash could find a subscript in w, taken
// as a variable name: it is written with a "[", or computed.
func maySubscript(w shellWord) bool { return w.dynamic || strings.Contains(w.text, "[") }

// Options of the name-taking builtins, as their getopt strings declare
// them (bash's builtins/*.def).
var (
	printfOpts  = getopt{short: "v"}
	readOpts    = getopt{short: "adinNptu"}
	mapfileOpts = getopt{short: "dnOsuCc"}
	waitOpts    = getopt{short: "p"}
)

// attributeBuiltins set variables' attributes; their options may not
// make a variable an integer (-i: every assignment to it is evaluated) or
// a reference to another name (-n: a subscripted one is evaluated), nor
// inherit those (-I).
var attributeBuiltins = map[string]bool{"declare": true, "typeset": true, "local": true, "readonly": true, "export": true}

// checkNames checks the variable names a builtin that takes them is
// given (see above); name is the program's lowercased name, without a
// slash.
func (al *Rules) checkNames(name string, args []shellWord) error {
	texts := make([]string, len(args))
	for i, a := range args {
		texts[i] = a.text
	}
	// varName refuses args[i] when bash could read a subscript in it:
	// written with a "[", or computed.
	varName := func(i int) error {
		if i < 0 || i >= len(args) || !maySubscript(args[i]) {
			return nil
		}
		return al.refuse(name, fmt.Sprintf("%s takes variable names written out without a subscript (NAME, not %q) under an allowlist: bash evaluates a subscript as code", name, args[i].text))
	}
	switch name {
	case "let":
		return al.refuse(name, "let evaluates arithmetic, which runs code through array subscripts; it is not allowed under an allowlist")
	case "printf":
		return al.checkPrintf(args, texts, varName)
	case "read", "mapfile", "readarray", "wait":
		g := map[string]getopt{"read": readOpts, "mapfile": mapfileOpts, "readarray": mapfileOpts, "wait": waitOpts}[name]
		first, err := al.nameOptions(name, g, args, texts, map[string]bool{"a": name == "read", "p": name == "wait"})
		if err != nil {
			return err
		}
		switch name {
		case "read":
			for i := first; i < len(args); i++ {
				if err := varName(i); err != nil {
					return err
				}
			}
		case "mapfile", "readarray":
			return varName(first)
		}
		return nil
	case "getopts":
		return varName(1)
	case "unset":
		first, err := al.nameOptions(name, getopt{}, args, texts, nil)
		if err != nil {
			return err
		}
		for i := first; i < len(args); i++ {
			if err := varName(i); err != nil {
				return err
			}
		}
		return nil
	case "test":
		for i, a := range args {
			if a.splits {
				return al.refuse(name, "quote the expansions in test's arguments under an allowlist: an unquoted one can become -v NAME, and bash evaluates a subscript of NAME as code")
			}
			if (a.text == "-v" || a.text == "-R" || a.dynamic) && i+1 < len(args) && (args[i+1].dynamic || strings.Contains(args[i+1].text, "[")) {
				return al.refuse(name, "test -v and -R take variable names written out (NAME) under an allowlist: bash evaluates a subscript or an expanded name as code")
			}
		}
		return nil
	}
	if !attributeBuiltins[name] {
		return nil
	}
	i := 0
	for ; i < len(args); i++ {
		t := texts[i]
		if args[i].dynamic && !args[i].assign {
			return al.refuse(name, fmt.Sprintf("%s takes options and variable names written out (NAME or NAME=value) under an allowlist: bash evaluates a subscript of a name as code", name))
		}
		if t == "--" {
			i++
			break
		}
		if len(t) < 2 || (t[0] != '-' && t[0] != '+') {
			break
		}
		if name != "export" && strings.ContainsAny(t[1:], "inI") {
			return al.refuse(name, fmt.Sprintf("%s %s is not allowed under an allowlist: an integer variable (-i) or a name reference (-n) makes bash evaluate values as code", name, t))
		}
	}
	for ; i < len(args); i++ {
		if args[i].assign {
			continue // NAME=value: the name is written out
		}
		if err := varName(i); err != nil {
			return err
		}
	}
	return nil
}

// nameOptions reads the leading options of a builtin whose option
// letters in g.short take a value, and returns the index of its first
// operand. The value of an option in names is a variable name and must be
// a plain identifier written out; an option word that is computed could
// be any option, and is refused.
func (al *Rules) nameOptions(name string, g getopt, args []shellWord, texts []string, names map[string]bool) (int, error) {
	i := 0
	for i < len(args) {
		t := texts[i]
		if args[i].dynamic {
			// Computed, it may be any option, -v or -p with the next word
			// for a name.
			if args[i].splits || i+1 < len(args) && maySubscript(args[i+1]) {
				return 0, al.refuse(name, fmt.Sprintf("the options of %s must be written out under an allowlist: a computed one can name a variable, and bash evaluates a subscript of a name as code", name))
			}
			return i, nil
		}
		if t == "--" {
			return i + 1, nil
		}
		if len(t) < 2 || t[0] != '-' {
			return i, nil
		}
		for j := 1; j < len(t); j++ {
			opt := t[j : j+1]
			if !strings.Contains(g.short, opt) {
				continue
			}
			val, dynamic := t[j+1:], args[i].dynamic
			if val == "" {
				if i+1 >= len(args) {
					return 0, al.refuse(name, fmt.Sprintf("%s -%s lacks its value", name, opt))
				}
				i++
				val, dynamic = texts[i], args[i].dynamic
			}
			if name == "mapfile" || name == "readarray" {
				if opt == "C" {
					return 0, al.refuse(name, name+" -C runs its callback as a command the allowlist cannot check; it is not allowed under an allowlist")
				}
			}
			if names[opt] && (dynamic || strings.Contains(val, "[")) {
				return 0, al.refuse(name, fmt.Sprintf("%s -%s takes a variable name written out (NAME, not %q) under an allowlist: bash evaluates a subscript or an expanded name as code", name, opt, val))
			}
			break
		}
		i++
	}
	return i, nil
}

// checkPrintf checks printf's -v NAME: written out, without a subscript.
// A computed first argument may be -v itself, so then the next word is
// taken for its name.
func (al *Rules) checkPrintf(args []shellWord, texts []string, varName func(int) error) error {
	if len(args) == 0 {
		return nil
	}
	if args[0].dynamic {
		if args[0].splits {
			return al.refuse("printf", "quote printf's first argument under an allowlist: an unquoted expansion can become -v NAME, and bash evaluates a subscript of NAME as code")
		}
		return varName(1)
	}
	_, err := al.nameOptions("printf", printfOpts, args, texts, map[string]bool{"v": true})
	return err
}

// fdVarSubscript is bash's redirection that stores the descriptor it opens
// in a variable, {NAME}>file, with a subscript in NAME.
var fdVarSubscript = regexp.MustCompile(`\{[^{}\s]*\[[^{}]*\}[<>]`)

// namedFDSubscript refuses {NAME[…]}>file anywhere in cmd, quoted or not.
func namedFDSubscript(cmd string) error {
	if fdVarSubscript.MatchString(cmd) {
		return errors.New("bash's {NAME[…]}> redirection is not allowed under an allowlist: bash evaluates the subscript as code")
	}
	return nil
}
