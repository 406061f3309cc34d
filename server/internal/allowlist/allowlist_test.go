package allowlist

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// basicRules allow a few programs and no wrappers.
var basicRules = []api.CommandRule{
	{Command: "ls"},
	{Command: "echo"},
	{Command: "cat"},
	{Command: "grep"},
	{Command: "python3"},
	{Command: "find"},
	{Command: "curl", ArgsAllow: []string{`https://api\.example\.com/`}, ArgsDeny: []string{`(^|\s)-o\b`, `--output`}},
	{Command: "git", ArgsAllow: []string{`^(status|log|diff)\b`}},
	{Command: "git", ArgsAllow: []string{`^fetch origin$`}}, // a second rule for one program: either may accept
}

// wrapperRules are basicRules plus the wrappers, which then run what they
// wrap only if that is allowed too.
var wrapperRules = append(append([]api.CommandRule(nil), basicRules...),
	api.CommandRule{Command: "env"}, api.CommandRule{Command: "timeout"}, api.CommandRule{Command: "nohup"},
	api.CommandRule{Command: "xargs"}, api.CommandRule{Command: "nice"}, api.CommandRule{Command: "setsid"},
	api.CommandRule{Command: "stdbuf"}, api.CommandRule{Command: "watch"}, api.CommandRule{Command: "flock"},
	api.CommandRule{Command: "ssh"}, api.CommandRule{Command: "bash"}, api.CommandRule{Command: "sh"},
)

// pathRules allow one program by its absolute path, and sudo by path.
var pathRules = []api.CommandRule{{Command: "/usr/bin/ls"}, {Command: "/usr/bin/sudo"}}

// setterRules list the builtins that set variables by name.
var setterRules = append(append([]api.CommandRule(nil), basicRules...),
	api.CommandRule{Command: "export"}, api.CommandRule{Command: "read"},
	api.CommandRule{Command: "printf"}, api.CommandRule{Command: "declare"},
)

// allowlistCases are the reference's allowlist cases (test_command_whitelist.py
// and test_account_allowed_commands.py, reference §3.6) and ours. program
// is the program a refusal names ("" when the refusal is about the whole
// command, such as a substitution).
var allowlistCases = []struct {
	name    string
	rules   []api.CommandRule
	command string
	allowed bool
	program string
	reason  string // a substring of the refusal's message
}{
	// Programs: basename, case-insensitive.
	{"listed program", basicRules, "ls", true, "", ""},
	{"listed program with args", basicRules, "ls -la /workspace", true, "", ""},
	{"case-insensitive", basicRules, "LS -la", true, "", ""},
	{"unlisted program", basicRules, "rm -rf /", false, "rm", "not in the account's allowlist"},

	// A program named with a slash runs that file: only a rule naming
	// exactly that path allows it (issue 17, finding 6).
	{"absolute path of a listed name", basicRules, "/bin/ls /tmp", false, "/bin/ls", "not in the account's allowlist"},
	{"relative path of a listed name", basicRules, "./bin/ls", false, "./bin/ls", ""},
	{"path in a subdirectory", basicRules, "bin/ls", false, "bin/ls", ""},
	{"unlisted absolute path", basicRules, "/usr/bin/rm -rf /", false, "/usr/bin/rm", ""},
	{"workspace path", basicRules, "/workspace/ls", false, "/workspace/ls", ""},
	{"dot-dot path", pathRules, "/usr/bin/../bin/ls", false, "/usr/bin/../bin/ls", ""},
	{"listed path", pathRules, "/usr/bin/ls -la", true, "", ""},
	{"listed path is case-sensitive", pathRules, "/USR/BIN/LS", false, "/USR/BIN/LS", ""},
	{"listed path does not allow the name", pathRules, "ls", false, "ls", ""},
	{"listed path with a trailing slash", pathRules, "/usr/bin/ls/", false, "/usr/bin/ls/", ""},
	{"quoted path", basicRules, "'./ls'", false, "./ls", ""},
	{"path through a builtin", basicRules, "exec ./ls", false, "./ls", ""},
	{"path of a builtin name", basicRules, "/usr/bin/time ls", false, "/usr/bin/time", ""},
	{"path through a wrapper", wrapperRules, "timeout 5 ./bin/ls", false, "./bin/ls", ""},
	{"path through env", wrapperRules, "env FOO=1 /tmp/ls", false, "/tmp/ls", ""},
	{"path through sh -c", wrapperRules, "sh -c './ls'", false, "./ls", ""},
	{"path through xargs", wrapperRules, "echo x | xargs ./ls", false, "./ls", ""},
	{"path of a refused program", pathRules, "/usr/bin/sudo ls", false, "sudo", "changing user"},

	// Variables that change what runs may not be set (finding 6).
	{"PATH before the program", basicRules, "PATH=/workspace/bin ls", false, "", "setting PATH"},
	{"PATH alone", basicRules, "PATH=/workspace/bin; ls", false, "", "setting PATH"},
	{"PATH on its own line", basicRules, "PATH=/workspace/bin\nls", false, "", "setting PATH"},
	{"PATH appended", basicRules, "PATH+=:/workspace/bin ls", false, "", ""},
	{"PATH array element", basicRules, "PATH[0]=/workspace/bin ls", false, "", ""},
	{"LD_PRELOAD", basicRules, "LD_PRELOAD=/workspace/x.so ls", false, "", "setting LD_PRELOAD"},
	{"LD_LIBRARY_PATH", basicRules, "LD_LIBRARY_PATH=/workspace ls", false, "", "setting LD_LIBRARY_PATH"},
	{"LD_AUDIT after another", basicRules, "FOO=1 LD_AUDIT=/x.so ls", false, "", "setting LD_AUDIT"},
	{"lower-case ld_preload", basicRules, "ld_preload=/x.so ls", false, "", ""},
	{"BASH_ENV", basicRules, "BASH_ENV=/workspace/rc ls", false, "", "setting BASH_ENV"},
	{"ENV", basicRules, "ENV=/workspace/rc ls", false, "", "setting ENV"},
	{"IFS", basicRules, "IFS=/ ls", false, "", "setting IFS"},
	{"SHELLOPTS", basicRules, "SHELLOPTS=xtrace ls", false, "", "setting SHELLOPTS"},
	{"GCONV_PATH", basicRules, "GCONV_PATH=/workspace ls", false, "", "setting GCONV_PATH"},
	{"PYTHONPATH", basicRules, "PYTHONPATH=/workspace python3 -m x", false, "", "setting PYTHONPATH"},
	{"NODE_OPTIONS", basicRules, "NODE_OPTIONS=--require=/x ls", false, "", "setting NODE_OPTIONS"},
	{"GIT config from the environment", basicRules, "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./x git status", false, "", "setting GIT_CONFIG_COUNT"},
	{"PAGER", basicRules, "PAGER=./x git log", false, "", "setting PAGER"},
	{"LESSOPEN", basicRules, "LESSOPEN='|./x %s' cat y", false, "", "setting LESSOPEN"},
	{"harmless assignment", basicRules, "PYTHONUNBUFFERED=1 FOO=bar python3 x.py", true, "", ""},
	{"PATH in an argument is text", basicRules, "echo PATH=/workspace/bin", true, "", ""},
	{"env -i PATH", wrapperRules, "env -i PATH=/bin ls", false, "", "setting PATH"},
	{"env LD_PRELOAD", wrapperRules, "env LD_PRELOAD=/x.so ls", false, "", "setting LD_PRELOAD"},
	{"env quoted PATH", wrapperRules, "env 'PATH=/workspace/bin' ls", false, "", "setting PATH"},
	{"env exported function", wrapperRules, "env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", false, "", "setting BASH_FUNC_ls%%"},
	{"PATH inside sh -c", wrapperRules, "sh -c 'PATH=/workspace/bin ls'", false, "", "setting PATH"},
	{"PATH through timeout's env", wrapperRules, "timeout 5 env PATH=/x ls", false, "", "setting PATH"},
	{"export PATH", setterRules, "export PATH=/workspace/bin; ls", false, "export", "may not set PATH"},
	{"export harmless", setterRules, "export FOO=1; ls", true, "", ""},
	{"read PATH", setterRules, "read PATH < f; ls", false, "read", "may not set PATH"},
	{"printf -v PATH", setterRules, "printf -v PATH /x; ls", false, "printf", "may not set PATH"},
	{"declare LD_PRELOAD", setterRules, "declare -x LD_PRELOAD=/x.so", false, "declare", "may not set LD_PRELOAD"},

	// Builtins that rebind names or run strings.
	{"alias", []api.CommandRule{{Command: "alias"}, {Command: "ls"}}, "alias ls=./x\nls", false, "alias", "alias"},
	{"trap", []api.CommandRule{{Command: "trap"}, {Command: "ls"}}, "trap './x' EXIT; ls", false, "trap", "trap"},
	{"enable -f", []api.CommandRule{{Command: "enable"}, {Command: "ls"}}, "enable -f ./x.so ls", false, "enable", ""},
	{"hash -p", []api.CommandRule{{Command: "hash"}, {Command: "ls"}}, "hash -p ./x ls; ls", false, "hash", "hash -p"},
	{"hash -r", []api.CommandRule{{Command: "hash"}, {Command: "ls"}}, "hash -r; ls", true, "", ""},
	{"empty command", basicRules, "", true, "", ""},
	{"only an assignment", basicRules, "FOO=1", true, "", ""},

	// Every simple command is checked.
	{"and list", basicRules, "ls && rm -rf /", false, "rm", ""},
	{"semicolon", basicRules, "ls; rm x", false, "rm", ""},
	{"or list", basicRules, "ls || rm x", false, "rm", ""},
	{"background", basicRules, "ls & rm x", false, "rm", ""},
	{"newline", basicRules, "ls\nrm x", false, "rm", ""},
	{"pipe of listed", basicRules, "ls | grep foo", true, "", ""},
	{"pipe stderr too", basicRules, "ls |& grep foo", true, "", ""},
	{"pipe into unlisted", basicRules, "cat x | sh", false, "sh", ""},
	{"separators in quotes are text", basicRules, "echo 'ls; rm x && y'", true, "", ""},
	{"double-quoted separators", basicRules, `echo "a;b|c" | grep a`, true, "", ""},
	{"comment", basicRules, "ls # ; rm x", true, "", ""},
	{"hash inside a word", basicRules, "ls#x", false, "ls#x", ""},
	{"line continuation", basicRules, "echo a \\\n b", true, "", ""},

	// Assignments and redirections are not the program.
	{"leading assignment", basicRules, "FOO=bar ls", true, "", ""},
	{"assignments then unlisted", basicRules, "FOO=bar BAZ='a b' rm x", false, "rm", ""},
	{"redirections", basicRules, "ls > out.txt 2>&1", true, "", ""},
	{"fd redirection", basicRules, "ls 2>/dev/null", true, "", ""},
	{"redirection first", basicRules, ">out ls", true, "", ""},
	{"ampersand redirection", basicRules, "ls &> log", true, "", ""},
	// dash reads &> as & then >, so what follows the target is a program.
	{"ampersand redirection then a program", basicRules, "ls &>log ./bin/ls", false, "./bin/ls", ""},
	{"ampersand append then a program", basicRules, "ls &>>log rm x", false, "rm", ""},
	// bash reads $'…' as ANSI-C quoting, where \' does not end it; dash
	// reads $ then '…'. What one reading hides the other runs.
	{"ANSI-C quote hides a command from dash", basicRules, "ls $'\\''; ./bin/ls #'", false, "./bin/ls", ""},
	{"quote hides a command from bash", basicRules, "ls $'\\'; ./bin/ls #\\''", false, "./bin/ls", ""},
	{"ANSI-C quote", basicRules, "echo $'a\\tb'", true, "", ""},
	// bash evaluates these expansions' values as code (a value holding
	// z[$(./bin/ls)] runs it); dash refuses them as bad substitutions.
	{"prompt expansion", basicRules, `a='$'; b='('; x="$a${b}./bin/ls)"; ls ${x@P}`, false, "", "POSIX parameter expansions"},
	{"subscript", basicRules, `ls "${y[x]}"`, false, "", "POSIX parameter expansions"},
	{"substring offset", basicRules, "ls ${PATH:x:1}", false, "", "POSIX parameter expansions"},
	{"slice of all", basicRules, "echo ${@:x}", false, "", "POSIX parameter expansions"},
	{"indirection", basicRules, "ls ${!x}", false, "", "POSIX parameter expansions"},
	{"length of element", basicRules, "ls ${#y[x]}", false, "", "POSIX parameter expansions"},
	{"nested", basicRules, "ls ${x:-${y[x]}}", false, "", "POSIX parameter expansions"},
	{"old arithmetic", basicRules, "ls $[x]", false, "", "arithmetic"},
	{"POSIX expansions", basicRules, `echo ${HOME} ${1} ${#x} ${x:-d} ${x-d} ${x:=d} ${x:?e} ${x:+y} ${x%.go} ${x%%/*} ${x#./} ${x##*/} ${#} ${!} ${?} ${@} "${x:-${y}}"`, true, "", ""},
	{"unterminated ANSI-C quote", basicRules, "echo $'a\\'", false, "", "unterminated"},
	{"redirection target is not a program", basicRules, "echo hi > rm", true, "", ""},

	// Refused outright, as in the reference, even quoted.
	{"command substitution", basicRules, "echo $(rm -rf /)", false, "", "command substitution"},
	{"quoted command substitution", basicRules, "echo '$(ls)'", false, "", "command substitution"},
	{"arithmetic looks like substitution", basicRules, "echo $((1+2))", false, "", "command substitution"},
	{"backticks", basicRules, "echo `rm -rf /`", false, "", "backticks"},
	{"heredoc", basicRules, "cat <<EOF\nhi\nEOF", false, "", "heredocs"},
	{"here-string", basicRules, "cat <<< hi", false, "", "heredocs"},
	{"input process substitution", basicRules, "cat <(rm x)", false, "", "process substitution"},
	{"output process substitution", basicRules, "echo >(rm x)", false, "", "process substitution"},
	{"NUL byte", basicRules, "ls\x00; rm x", false, "", "NUL"},
	{"subshell", basicRules, "(rm x)", false, "", "subshells"},
	{"subshell of listed", basicRules, "(ls)", false, "", "subshells"},
	{"function definition", basicRules, "f() { ls; }", false, "", "subshells"},
	{"unterminated quote", basicRules, "echo 'oops", false, "", "unterminated"},
	{"unterminated double quote", basicRules, `echo "oops`, false, "", "unterminated"},

	// The program must be written out.
	{"variable program", basicRules, "$SHELL -c ls", false, "$SHELL", "written out"},
	{"braced variable program", basicRules, "${X:-rm} x", false, "", "written out"},
	{"ANSI-C quoted program", basicRules, `$'\x72m' x`, false, "", "written out"},
	{"glob program", basicRules, "l? -la", false, "l?", "written out"},
	{"glob path program", basicRules, "/bin/r* x", false, "", "written out"},
	{"escaped program", basicRules, `\rm x`, false, "rm", ""},
	{"escape inside program", basicRules, `r\m x`, false, "rm", ""},
	{"quoted program", basicRules, "'rm' x", false, "rm", ""},
	{"partly quoted program", basicRules, `"r"m x`, false, "rm", ""},
	{"empty quoted program", basicRules, "'' x", false, "", "empty"},
	{"variables in arguments", basicRules, "echo $HOME", true, "", ""},

	// Shell keywords.
	{"block of listed", basicRules, "{ ls; echo; }", true, "", ""},
	{"block of unlisted", basicRules, "{ rm x; }", false, "rm", ""},
	{"if of listed", basicRules, "if ls; then echo ok; else echo no; fi", true, "", ""},
	{"if hiding unlisted", basicRules, "if ls; then rm x; fi", false, "rm", ""},
	{"while loop", basicRules, "while ls; do echo; done", true, "", ""},
	{"for loop", basicRules, "for f in a b; do echo $f; done", true, "", ""},
	{"for loop running unlisted", basicRules, "for f in a b; do rm $f; done", false, "rm", ""},
	{"negation", basicRules, "! ls", true, "", ""},
	{"case", basicRules, "case x in x) ls;; esac", false, "", ""},

	// Argument patterns: args_allow must match (any), args_deny must not.
	{"args allowed", basicRules, "curl https://api.example.com/v1/items", true, "", ""},
	{"args not allowed", basicRules, "curl https://evil.example.net/", false, "curl", "arguments"},
	{"args denied", basicRules, "curl -o /tmp/x https://api.example.com/v1", false, "curl", "arguments"},
	{"long option denied", basicRules, "curl --output=x https://api.example.com/v1", false, "curl", "arguments"},
	{"patterns case-insensitive", basicRules, "CURL HTTPS://API.EXAMPLE.COM/x", true, "", ""},
	{"patterns see unquoted args", basicRules, `curl 'https://api.example.com/a b'`, true, "", ""},
	{"no args vs args_allow", basicRules, "curl", false, "curl", "arguments"},
	{"first rule of two", basicRules, "git status --short", true, "", ""},
	{"second rule of two", basicRules, "git fetch origin", true, "", ""},
	{"neither rule", basicRules, "git push --force", false, "git", "arguments"},

	// find's exec actions.
	{"find", basicRules, "find . -name '*.go'", true, "", ""},
	{"find -exec", basicRules, `find . -exec rm {} \;`, false, "find", "-exec"},
	{"find -execdir", basicRules, "find . -EXECDIR rm {} +", false, "find", ""},
	{"find -ok", basicRules, `find . -ok rm {} \;`, false, "find", ""},
	{"find -okdir", basicRules, `find . -okdir rm {} \;`, false, "find", ""},
	{"find computed action", basicRules, "find . -$A ./x {} +", false, "find", "written out"},
	{"find unquoted value", basicRules, "find . -name $P", false, "find", "written out"},
	{"find glob value", basicRules, "find . -name *.go", false, "find", "written out"},
	{"find quoted value", basicRules, `find . -name "$P"`, true, "", ""},
	{"find quoted computed word", basicRules, `find . "$A" ./x {} +`, false, "find", "written out"},
	{"find quoted start", basicRules, `find "$D" -name x`, false, "find", "written out"},

	// Wrappers read their own options and operands before the program:
	// a computed word there could become another program.
	{"nice computed value", wrapperRules, "nice -n$X ls", false, "nice", "written out"},
	{"timeout computed duration", wrapperRules, "timeout $T ls", false, "timeout", "written out"},
	{"env computed assignment", wrapperRules, "env A=$X ls", false, "env", "written out"},
	{"exec -a computed", wrapperRules, "exec -a $N ls", false, "exec", "written out"},
	{"flock computed file", wrapperRules, "flock $F ls", false, "flock", "written out"},
	{"watch computed word", wrapperRules, "watch ls $X", false, "watch", "written out"},
	{"ssh computed option", wrapperRules, "ssh $O host ls", false, "ssh", "written out"},
	{"wrapped program's own args may be computed", wrapperRules, "timeout 5 ls $D", true, "", ""},

	// Patterns see arguments as written: a rule with patterns refuses
	// computed ones.
	{"computed args vs patterns", basicRules, "curl https://api.example.com/ $X", false, "curl", "written out"},
	{"glob args vs patterns", basicRules, "git diff *", false, "git", "written out"},
	{"computed args without patterns", basicRules, "ls $D *.go", true, "", ""},

	// Never allowed.
	{"eval", basicRules, "eval ls", false, "eval", "eval"},
	{"sudo", basicRules, "sudo ls", false, "sudo", "changing user"},
	{"sudo even when listed", []api.CommandRule{{Command: "sudo"}, {Command: "ls"}}, "sudo ls", false, "sudo", "changing user"},
	{"su", basicRules, "su -c ls", false, "su", ""},

	// Wrappers that are not listed are refused like any program.
	{"env unlisted", basicRules, "env ls", false, "env", ""},
	{"timeout unlisted", basicRules, "timeout 5 ls", false, "timeout", ""},
	{"nohup unlisted", basicRules, "nohup ls", false, "nohup", ""},
	{"xargs unlisted", basicRules, "xargs ls", false, "xargs", ""},
	{"bash -c unlisted", basicRules, "bash -c ls", false, "bash", ""},
	{"sh -c unlisted", basicRules, "sh -c 'ls'", false, "sh", ""},
	{"ssh unlisted", basicRules, "ssh host ls", false, "ssh", ""},

	// Builtins that run their operand: only the operand counts.
	{"exec", basicRules, "exec ls", true, "", ""},
	{"exec unlisted", basicRules, "exec rm x", false, "rm", ""},
	{"exec with -a", basicRules, "exec -a name rm x", false, "rm", ""},
	{"exec redirections only", basicRules, "exec 2>&1", true, "", ""},
	{"command", basicRules, "command rm x", false, "rm", ""},
	{"builtin", basicRules, "builtin ls", true, "", ""},
	{"time", basicRules, "time ls", true, "", ""},
	{"time -p unlisted", basicRules, "time -p rm x", false, "rm", ""},

	// Listed wrappers: what they run is checked too.
	{"env", wrapperRules, "env FOO=1 ls", true, "", ""},
	{"env -i", wrapperRules, "env -i FOO=1 ls", true, "", ""},
	{"env alone", wrapperRules, "env", true, "", ""},
	{"env runs unlisted", wrapperRules, "env rm x", false, "rm", ""},
	{"env -u runs unlisted", wrapperRules, "env -u HOME rm x", false, "rm", ""},
	{"env -S", wrapperRules, "env -S 'rm x'", false, "env", "env -S"},
	{"timeout", wrapperRules, "timeout 5 ls", true, "", ""},
	{"timeout long options", wrapperRules, "timeout --signal=KILL 5s ls", true, "", ""},
	{"timeout -s runs unlisted", wrapperRules, "timeout -s KILL 5 rm x", false, "rm", ""},
	{"timeout --kill-after runs unlisted", wrapperRules, "timeout --kill-after 1 5 rm", false, "rm", ""},
	{"timeout option without value", wrapperRules, "timeout -s", false, "timeout", "lacks its value"},
	{"nohup", wrapperRules, "nohup ls", true, "", ""},
	{"nohup runs unlisted", wrapperRules, "nohup rm x", false, "rm", ""},
	{"nice", wrapperRules, "nice -n 10 ls", true, "", ""},
	{"nice attached value runs unlisted", wrapperRules, "nice -n10 rm x", false, "rm", ""},
	{"setsid", wrapperRules, "setsid -f ls", true, "", ""},
	{"setsid runs unlisted", wrapperRules, "setsid -f rm x", false, "rm", ""},
	{"stdbuf", wrapperRules, "stdbuf -oL ls", true, "", ""},
	{"stdbuf runs unlisted", wrapperRules, "stdbuf -o L rm x", false, "rm", ""},
	{"xargs", wrapperRules, "ls | xargs grep foo", true, "", ""},
	{"xargs default echo", wrapperRules, "ls | xargs", true, "", ""},
	{"xargs runs unlisted", wrapperRules, "ls | xargs -n 1 rm", false, "rm", ""},
	{"xargs -I runs unlisted", wrapperRules, "ls | xargs -I{} rm {}", false, "rm", ""},
	{"watch", wrapperRules, "watch -n 1 ls", true, "", ""},
	{"watch joins a command line", wrapperRules, "watch 'ls; rm x'", false, "rm", ""},
	{"watch -x", wrapperRules, "watch -n 1 -x ls -la", true, "", ""},
	{"watch -x runs unlisted", wrapperRules, "watch -x rm x", false, "rm", ""},
	{"flock", wrapperRules, "flock /tmp/l ls", true, "", ""},
	{"flock runs unlisted", wrapperRules, "flock /tmp/l rm x", false, "rm", ""},
	{"flock -c after the file", wrapperRules, "flock /tmp/l -c 'rm x'", false, "rm", ""},
	{"flock -c listed", wrapperRules, "flock /tmp/l -c 'ls | grep x'", true, "", ""},
	{"flock -c option", wrapperRules, "flock -c 'rm x' /tmp/l", false, "rm", ""},
	{"nested wrappers", wrapperRules, "timeout 5 env FOO=1 nice -n 5 ls", true, "", ""},
	{"nested wrappers run unlisted", wrapperRules, "timeout 5 env FOO=1 nice rm x", false, "rm", ""},
	{"exec of env of unlisted", wrapperRules, "exec env rm x", false, "rm", ""},

	// sh -c: the script is a command line.
	{"bash -c", wrapperRules, "bash -c 'ls | grep x'", true, "", ""},
	{"bash -c runs unlisted", wrapperRules, "bash -c 'rm x'", false, "rm", ""},
	{"sh -ec", wrapperRules, "sh -ec 'ls'", true, "", ""},
	{"bash -lc runs unlisted", wrapperRules, "bash -c 'ls; rm x'", false, "rm", ""},
	{"bash -lc: a login shell", wrapperRules, "bash -lc 'ls'", false, "bash", "login or interactive"},
	{"bash -i", wrapperRules, "bash -i -c ls", false, "bash", "login or interactive"},
	{"bash --login", wrapperRules, "bash --login -c ls", false, "bash", "login or interactive"},
	{"bash --rcfile", wrapperRules, "bash --rcfile ./x -c ls", false, "bash", "login or interactive"},
	{"sh +i is not interactive", wrapperRules, "sh +i -c ls", true, "", ""},
	{"computed shell option", wrapperRules, "bash -$X ls", false, "bash", "written out"},
	{"computed script file", wrapperRules, "bash $F", false, "bash", "written out"},
	{"computed -o value", wrapperRules, "bash -o $O -c ls", false, "bash", "written out"},
	{"zsh -c reads .zshenv", []api.CommandRule{{Command: "zsh"}, {Command: "ls"}}, "zsh -c ls", false, "zsh", "zshenv"},
	{"zsh -f -c", []api.CommandRule{{Command: "zsh"}, {Command: "ls"}}, "zsh -f -c ls", true, "", ""},
	{"zsh -fc runs unlisted", []api.CommandRule{{Command: "zsh"}, {Command: "ls"}}, "zsh -fc 'rm x'", false, "rm", ""},
	{"bash -c computed script", wrapperRules, `bash -c "$CMD"`, false, "bash", "written out"},
	{"bash -c without script", wrapperRules, "bash -c", false, "bash", "needs a script"},
	{"bash script file", wrapperRules, "bash build.sh", true, "", ""},
	{"bash -o option then -c", wrapperRules, "bash -o pipefail -c 'rm x'", false, "rm", ""},
	{"nested sh -c", wrapperRules, `sh -c "bash -c 'rm x'"`, false, "rm", ""},

	// ssh: the remote command is a command line; no command is refused.
	{"ssh with command", wrapperRules, "ssh host ls", true, "", ""},
	{"ssh options", wrapperRules, "ssh -p 2222 -i key user@host ls -la", true, "", ""},
	{"ssh interactive", wrapperRules, "ssh host", false, "ssh", "interactive"},
	{"ssh runs unlisted", wrapperRules, "ssh host rm x", false, "rm", ""},
	{"ssh remote command line", wrapperRules, "ssh -p 22 host 'ls; rm x'", false, "rm", ""},
	{"ssh ProxyCommand", wrapperRules, "ssh -o ProxyCommand='rm x' host ls", false, "ssh", "proxycommand"},
	{"ssh option after host", wrapperRules, "ssh host -o LocalCommand=x ls", false, "ssh", "localcommand"},
	{"ssh attached -o", wrapperRules, "ssh -oProxyCommand=x host ls", false, "ssh", "proxycommand"},
}

func TestAllowlistCheck(t *testing.T) {
	for _, tt := range allowlistCases {
		t.Run(tt.name, func(t *testing.T) {
			al, err := Compile(tt.rules)
			if err != nil {
				t.Fatalf("compileAllowlist: %v", err)
			}
			err = al.Check(tt.command)
			if tt.allowed {
				if err != nil {
					t.Errorf("check(%q) = %v, want allowed", tt.command, err)
				}
				return
			}
			ae, ok := errors.AsType[*api.Error](err)
			if !ok {
				t.Fatalf("check(%q) = %v, want an *api.Error refusal", tt.command, err)
			}
			if ae.Status != 403 || ae.Code != api.CodeCommandNotAllowed {
				t.Errorf("check(%q) = %d %s, want 403 %s", tt.command, ae.Status, ae.Code, api.CodeCommandNotAllowed)
			}
			if !strings.Contains(strings.ToLower(ae.Message), strings.ToLower(tt.reason)) {
				t.Errorf("check(%q) message %q does not mention %q", tt.command, ae.Message, tt.reason)
			}
			if tt.program != "" {
				got, _ := ae.Details.(map[string]string)
				if got["program"] != tt.program {
					t.Errorf("check(%q) names program %q, want %q", tt.command, got["program"], tt.program)
				}
			}
			if !strings.Contains(ae.Hint, "ls") {
				t.Errorf("check(%q) hint %q does not list the allowed programs", tt.command, ae.Hint)
			}
		})
	}
}

func TestCompileAllowlist(t *testing.T) {
	many := func(n int) []api.CommandRule {
		rules := make([]api.CommandRule, n)
		for i := range rules {
			rules[i] = api.CommandRule{Command: "p" + strings.Repeat("x", i)}
		}
		return rules
	}
	tests := []struct {
		name  string
		rules []api.CommandRule
		code  string // "" = valid
	}{
		{"one program", []api.CommandRule{{Command: "ls"}}, ""},
		{"fifty rules", many(api.MaxAllowlistRules), ""},
		{"longest pattern", []api.CommandRule{{Command: "curl", ArgsAllow: []string{strings.Repeat("a", api.MaxAllowlistPattern)}}}, ""},
		{"no rules", nil, api.CodeInvalidRules},
		{"too many rules", many(api.MaxAllowlistRules + 1), api.CodeTooManyRules},
		{"pattern too long", []api.CommandRule{{Command: "curl", ArgsDeny: []string{strings.Repeat("a", api.MaxAllowlistPattern+1)}}}, api.CodePatternTooLong},
		{"pattern does not compile", []api.CommandRule{{Command: "curl", ArgsAllow: []string{"["}}}, api.CodeInvalidPattern},
		{"lookahead is not RE2", []api.CommandRule{{Command: "curl", ArgsAllow: []string{"(?=x)"}}}, api.CodeInvalidPattern},
		{"empty command", []api.CommandRule{{Command: " "}}, api.CodeInvalidRules},
		{"absolute path", []api.CommandRule{{Command: "/bin/ls"}}, ""},
		{"relative path", []api.CommandRule{{Command: "./bin/ls"}}, api.CodeInvalidRules},
		{"path in a subdirectory", []api.CommandRule{{Command: "bin/ls"}}, api.CodeInvalidRules},
		{"unclean path", []api.CommandRule{{Command: "/usr/../bin/ls"}}, api.CodeInvalidRules},
		{"trailing slash", []api.CommandRule{{Command: "/bin/ls/"}}, api.CodeInvalidRules},
		{"root", []api.CommandRule{{Command: "/"}}, api.CodeInvalidRules},
		{"command with a space", []api.CommandRule{{Command: "git push"}}, api.CodeInvalidRules},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.rules)
			if tt.code == "" {
				if err != nil {
					t.Errorf("compileAllowlist = %v, want valid", err)
				}
				return
			}
			ae, ok := errors.AsType[*api.Error](err)
			if !ok || ae.Code != tt.code || ae.Status != 400 {
				t.Errorf("compileAllowlist = %v, want 400 %s", err, tt.code)
			}
		})
	}
}

func TestCommandRuleJSON(t *testing.T) {
	in := `["ls",{"command":"curl","args_allow":["^https://"],"args_deny":["-o"]},{"command":"git"}]`
	var rules []api.CommandRule
	if err := json.Unmarshal([]byte(in), &rules); err != nil {
		t.Fatal(err)
	}
	want := []api.CommandRule{{Command: "ls"}, {Command: "curl", ArgsAllow: []string{"^https://"}, ArgsDeny: []string{"-o"}}, {Command: "git"}}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("decoded rules (-want +got):\n%s", diff)
	}
	out, err := json.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	// A rule without patterns goes back to the short form.
	if got, want := string(out), `["ls",{"command":"curl","args_allow":["^https://"],"args_deny":["-o"]},"git"]`; got != want {
		t.Errorf("encoded rules = %s, want %s", got, want)
	}
	for _, bad := range []string{`[1]`, `[true]`, `[["ls"]]`, `[{"command":1}]`} {
		if err := json.Unmarshal([]byte(bad), &rules); err == nil {
			t.Errorf("Unmarshal(%s) succeeded, want an error", bad)
		}
	}
}

// FuzzAllowlist feeds the shell reader arbitrary command lines. It must
// not panic, must never allow a refused construct, and allowing more
// programs must never refuse a command allowed before.
func FuzzAllowlist(f *testing.F) {
	for _, tt := range allowlistCases {
		f.Add(tt.command)
	}
	basic, err := Compile(basicRules)
	if err != nil {
		f.Fatal(err)
	}
	wider, err := Compile(wrapperRules)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, command string) {
		errBasic := basic.Check(command)
		errWider := wider.Check(command)
		if errBasic == nil && errWider != nil {
			t.Errorf("check(%q) allowed with the basic rules but refused with more: %v", command, errWider)
		}
		if errWider != nil {
			if ae, ok := errors.AsType[*api.Error](errWider); !ok || ae.Code != api.CodeCommandNotAllowed {
				t.Errorf("check(%q) = %v, want a command_not_allowed refusal", command, errWider)
			}
			return
		}
		for _, r := range refusedSubstrings {
			if strings.Contains(command, r.text) {
				t.Errorf("check(%q) allowed a command containing %q", command, r.text)
			}
		}
		if strings.Contains(command, "\x00") {
			t.Errorf("check(%q) allowed a command with a NUL byte", command)
		}
	})
}
