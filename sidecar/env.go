package sidecar

import (
	"fmt"
	"slices"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// SafeEnv returns the base environment of every command (the reference's
// SAFE_EXEC_ENV) with HOME set to workspace. Nothing of the sidecar's own
// environment, such as its token, reaches a command.
func SafeEnv(workspace string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + workspace,
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"PYTHONUNBUFFERED=1",
		"PYTHONDONTWRITEBYTECODE=1",
		"TERM=xterm",
		"NODE_PATH=/usr/local/lib/node_modules",
		"PLAYWRIGHT_BROWSERS_PATH=/ms-playwright",
		"XDG_CONFIG_HOME=/tmp/.config",
		"XDG_CACHE_HOME=/tmp/.cache",
		// A taken-over bash would keep its history in HOME, the user's
		// workspace, among their files; /tmp is the sandbox's own.
		"HISTFILE=/tmp/.bash_history",
	}
}

// envNamePattern is what validEnvName accepts, for the error message.
const envNamePattern = `^[A-Za-z_][A-Za-z0-9_]*$`

// validEnvName reports whether name matches envNamePattern. A loop, not a
// regexp compiled at package init: every jail's start paid for that
// (issue 27).
func validEnvName(name string) bool {
	for i := range len(name) {
		switch c := name[i]; {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return name != ""
}

// deniedEnv reports whether a request may not set name: variables that change
// how the shell, the dynamic loader or an interpreter starts, so a caller
// could run code the command did not name. Case-insensitive, as the reference.
func deniedEnv(name string) bool {
	switch n := strings.ToUpper(name); n {
	case "PATH", "IFS", "ENV", "BASH_ENV", "BASH_FUNC",
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
		"DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH",
		"PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "NODE_OPTIONS", "NODE_PATH":
		return true
	default:
		// Exported bash functions travel as BASH_FUNC_<name>%%; the pattern
		// already refuses the %%, this keeps the intent if it ever loosens.
		return strings.HasPrefix(n, "BASH_FUNC_")
	}
}

// commandEnv returns base followed by the request's variables in name order;
// os/exec keeps the last of duplicate names, so the request's win.
// Unlike the reference's secret_env, which drops bad names silently, a bad
// name here is a 422: the caller asked for it explicitly.
func commandEnv(base []string, req map[string]string) ([]string, error) {
	names := make([]string, 0, len(req))
	for name, value := range req {
		if !validEnvName(name) {
			return nil, api.Invalid("env", fmt.Sprintf("invalid env variable name %q: must match %s", name, envNamePattern),
				"name each variable with letters, digits and underscores, not starting with a digit")
		}
		if deniedEnv(name) {
			return nil, api.Invalid("env", fmt.Sprintf("env variable %s may not be set", name),
				"it changes how the command starts (the shell, the loader or an interpreter); set it in the command itself if you mean to (NAME=value cmd)")
		}
		if strings.IndexByte(value, 0) >= 0 {
			return nil, api.Invalid("env", fmt.Sprintf("env variable %s contains a NUL byte", name),
				"remove the NUL byte: no environment variable can hold one")
		}
		names = append(names, name)
	}
	slices.Sort(names)
	env := slices.Grow(slices.Clip(base), len(names))
	for _, name := range names {
		env = append(env, name+"="+req[name])
	}
	return env, nil
}
