package envd

import (
	"regexp"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Message is e's message as the E2B surface answers it: its hint, as an
// E2B SDK user reads it (E2BHint), in parentheses after it.
func Message(e *api.Error) string {
	if h := E2BHint(e.Hint); h != "" {
		return e.Message + " (" + h + ")"
	}
	return e.Message
}

// e2bCalls are the boxkite CLI commands /v1's hints name, each as the
// E2B SDK call that does the same ($1: the id the command names).
var e2bCalls = []struct {
	cli  *regexp.Regexp
	call string
}{
	{regexp.MustCompile("`boxkite session create`"), "`Sandbox.create()`"},
	{regexp.MustCompile("`boxkite session ls`"), "`Sandbox.list()`"},
	{regexp.MustCompile("`boxkite session get`"), "`Sandbox.getInfo(id)`"},
	{regexp.MustCompile("`boxkite session resume ([^`]+)`"), "`Sandbox.connect('$1')`"},
	{regexp.MustCompile("`boxkite session fork ([^`]+)`"), "`Sandbox.fork('$1')`"},
	{regexp.MustCompile("`boxkite session rm ([^`]+)`"), "`Sandbox.kill('$1')`"},
	{regexp.MustCompile("`boxkite session snapshot`"), "`sbx.createSnapshot()`"},
	{regexp.MustCompile("`boxkite snapshots ls -s ([^`]+)`"), "`Sandbox.listSnapshots({sandboxId: '$1'})`"},
	{regexp.MustCompile("`boxkite snapshots ls`"), "`Sandbox.listSnapshots()`"},
	{regexp.MustCompile("`boxkite snapshots rm ID`"), "`Sandbox.deleteSnapshot(id)`"},
	{regexp.MustCompile("`boxkite ps`, `boxkite kill`"), "`sbx.commands.list()`, `sbx.commands.kill(pid)`"},
	{regexp.MustCompile("`boxkite log -s ([^`]+)`"), "`GET /v1/sandboxes/$1/log`"},
	{regexp.MustCompile(`raise the limit \(boxkite doctor says how\)`), "ask the server's operator to raise the limit"},
}

// cliCommand finds a boxkite CLI command a hint names: quoted
// ("`boxkite session ls`") or in parentheses ("(boxkite files cp)").
var cliCommand = regexp.MustCompile("[`(]boxkite [a-z]")

// E2BHint is a hint of boxkite's as an E2B SDK user reads it. /v1's hints
// name boxkite CLI commands, which that user does not run: each becomes
// the SDK call that does the same (Sandbox.create() for `boxkite session
// create`), and a hint that names a command with no such call is left
// out, the message standing alone. Any other hint is kept as it is.
func E2BHint(hint string) string {
	if !cliCommand.MatchString(hint) {
		return hint
	}
	for _, c := range e2bCalls {
		hint = c.cli.ReplaceAllString(hint, c.call)
	}
	if cliCommand.MatchString(hint) || strings.Contains(hint, "boxkite doctor") {
		return ""
	}
	return hint
}
