package envd

import (
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
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
var e2bCalls = []tools.HintCommand{
	tools.NewHintCommand("`boxkite session create`", "`Sandbox.create()`"),
	tools.NewHintCommand("`boxkite session ls`", "`Sandbox.list()`"),
	tools.NewHintCommand("`boxkite session get`", "`Sandbox.getInfo(id)`"),
	tools.NewHintCommand("`boxkite session resume ([^`]+)`", "`Sandbox.connect('$1')`"),
	tools.NewHintCommand("`boxkite session fork ([^`]+)`", "`Sandbox.fork('$1')`"),
	tools.NewHintCommand("`boxkite session rm ([^`]+)`", "`Sandbox.kill('$1')`"),
	tools.NewHintCommand("`boxkite session snapshot`", "`sbx.createSnapshot()`"),
	tools.NewHintCommand("`boxkite snapshots ls -s ([^`]+)`", "`Sandbox.listSnapshots({sandboxId: '$1'})`"),
	tools.NewHintCommand("`boxkite snapshots ls`", "`Sandbox.listSnapshots()`"),
	tools.NewHintCommand("`boxkite snapshots rm ID`", "`Sandbox.deleteSnapshot(id)`"),
	tools.NewHintCommand("`boxkite ps`, `boxkite kill`", "`sbx.commands.list()`, `sbx.commands.kill(pid)`"),
	tools.NewHintCommand("`boxkite log -s ([^`]+)`", "`GET /v1/sandboxes/$1/log`"),
	// The sidecar's file refusals (sidecar/refusals.go, transfer.go).
	tools.NewHintCommand("`boxkite files view PATH`", "`sbx.files.read(path)`"),
	tools.NewHintCommand("copy a directory with -r: `boxkite files cp -r ID:PATH DST`", "list it with `sbx.files.list(path)` and read its files one by one"),
	tools.NewHintCommand(`raise the limit \(boxkite doctor says how\)`, "ask the server's operator to raise the limit"),
}

// e2bFiles are phrases of the sidecar's file refusals as an E2B SDK user
// reads them: its roots as E2B's relative paths resolve. (The CLI
// commands they name are e2bCalls'.)
var e2bFiles = strings.NewReplacer(
	"a path under /workspace (relative paths start there)", "a path under /home/user (relative paths start there), which is /workspace",
)

// E2BHint is a hint of boxkite's as an E2B SDK user reads it. /v1's hints
// name boxkite CLI commands, which that user does not run: each becomes
// the SDK call that does the same (Sandbox.create() for `boxkite session
// create`), and a hint that names a command with no such call is left
// out, the message standing alone. Any other hint is kept as it is.
func E2BHint(hint string) string {
	if hint = tools.ReplaceCommands(e2bFiles.Replace(hint), e2bCalls); tools.NamesCommand(hint) {
		return ""
	}
	return hint
}
