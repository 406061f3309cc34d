package tools

import (
	"regexp"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// HintCommand is a boxkite CLI command the API's hints name, and what
// stands for it where the reader cannot run the CLI: an agent calling
// tools (agentHint), an E2B SDK user (server/e2b/envd).
type HintCommand struct {
	cli     *regexp.Regexp
	quoted  *regexp.Regexp // cli in single quotes; nil when cli has no backquote
	instead string
}

// NewHintCommand is the command cli matches as the hints word it (a
// regexp: "`boxkite session resume ([^`]+)`", its group the id the command
// names), and instead what stands for it ($1: the group). A command in
// backquotes matches in single quotes too ("'boxkite files ls DIR'"), the
// form some hints (the sidecar's) and the CLI's own messages use.
func NewHintCommand(cli, instead string) HintCommand {
	c := HintCommand{cli: regexp.MustCompile(cli), instead: instead}
	if strings.Contains(cli, "`") {
		c.quoted = regexp.MustCompile(strings.ReplaceAll(cli, "`", "'"))
	}
	return c
}

// cliCommand finds a boxkite CLI command a hint names: quoted
// ("`boxkite session ls`", or as the CLI's own hints quote it, "'boxkite
// files ls DIR'", which the sidecar's file refusals share) or in
// parentheses ("(boxkite files cp)").
var cliCommand = regexp.MustCompile("[`'(]boxkite [a-z]")

// cliAside is a parenthesised aside that names a CLI command.
var cliAside = regexp.MustCompile(" ?\\([^()]*[`'(]boxkite [a-z][^()]*\\)")

// NamesCommand reports whether s names a boxkite CLI command, quoted
// (in backquotes or single quotes) or in parentheses.
func NamesCommand(s string) bool {
	return cliCommand.MatchString(s) || strings.Contains(s, "boxkite doctor")
}

// ReplaceCommands is hint with each command of cmds it names replaced by
// what stands for it, in cmds' order (a command with an id before the same
// without). A command cmds lacks is left as it is: NamesCommand still
// finds it.
func ReplaceCommands(hint string, cmds []HintCommand) string {
	if !NamesCommand(hint) {
		return hint
	}
	for _, c := range cmds {
		hint = c.cli.ReplaceAllString(hint, c.instead)
		if c.quoted != nil {
			hint = c.quoted.ReplaceAllString(hint, c.instead)
		}
	}
	return hint
}

// DropCommands is hint without the parenthesised asides and the
// "; "-separated clauses that name a boxkite CLI command; "" when nothing
// is left.
func DropCommands(hint string) string {
	if !NamesCommand(hint) {
		return hint
	}
	hint = cliAside.ReplaceAllString(hint, "")
	var kept []string
	for clause := range strings.SplitSeq(hint, "; ") {
		if !NamesCommand(clause) {
			kept = append(kept, clause)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "; "))
}

// toolCall is a boxkite CLI command the API's hints name as the tool
// that does the same for an agent.
type toolCall struct {
	tool string
	cmd  HintCommand
}

// asTool is cli as `tool` and then with ($1: the id the command names).
func asTool(cli, tool, with string) toolCall {
	return toolCall{tool, NewHintCommand(cli, "`"+tool+"`"+with)}
}

// toolCalls are the boxkite CLI commands the API's hints name, each as the
// tool that does the same for an agent, a command with an id before the
// same without.
var toolCalls = []toolCall{
	asTool("`boxkite session create`", "create_sandbox", ""),
	asTool("`boxkite session ls`", "list_sandboxes", ""),
	asTool("`boxkite session get ([^`]+)`", "get_sandbox", " with session_id $1"),
	asTool("`boxkite session get`", "get_sandbox", ""),
	asTool("`boxkite session resume ([^`]+)`", "resume_sandbox", " with session_id $1"),
	asTool("`boxkite session resume`", "resume_sandbox", ""),
	asTool("`boxkite session pause`", "pause_sandbox", ""),
	asTool("`boxkite session fork ([^`]+)`", "fork_sandbox", " with session_id $1"),
	asTool("`boxkite session rm ([^`]+)`", "destroy_sandbox", " with session_id $1"),
	asTool("`boxkite session rm`", "destroy_sandbox", ""),
	asTool("`boxkite session snapshot`", "snapshot_sandbox", ""),
	asTool("`boxkite images ls`", "list_sandbox_images", ""),
	asTool("`boxkite images rm ID`", "delete_sandbox_image", ""),
	asTool("`boxkite volumes ls`", "list_sandbox_volumes", ""),
	asTool("`boxkite volumes rm ID`", "delete_sandbox_volume", ""),
	asTool("`boxkite mcp-connections ls`", "list_mcp_connections", ""),
	asTool("`boxkite ps`", "list_processes", ""),
	// The sidecar's file refusals (sidecar/refusals.go), in the CLI's
	// quotes (NewHintCommand matches them in either).
	asTool("`boxkite files ls DIR`", "ls", ""),
	asTool("`boxkite files view PATH`", "view", ""),
}

// operatorLimit is the hints' `boxkite doctor` for a limit of the host,
// which only the server's operator can raise.
var operatorLimit = NewHintCommand(`raise the limit \(boxkite doctor says how\)`, "ask the server's operator to raise the limit")

// codeBadResponse is client.CodeBadResponse (tools does not import the
// client): the server URL answered with something that is not boxkite. Its
// hint is the client's, not the API's, for whoever set the URL up (the
// CLI's config a person runs `boxkite config show` for), and stays.
const codeBadResponse = "bad_response"

// refusalHint is e's hint as an agent with the tools has reports reads
// it: agentHint of the API's.
func refusalHint(e *api.Error, has func(tool string) bool) string {
	if e.Code == codeBadResponse {
		return e.Hint
	}
	return agentHint(e.Hint, has)
}

// agentHint is a hint of the API's as an agent reads it. The API's hints
// name boxkite CLI commands, which an agent calling tools cannot run: each
// becomes the tool that does the same (`list_sandboxes` for `boxkite
// session ls`) when the agent has that tool (has reports it); an aside or
// a "; "-separated clause that still names a command, with no such tool
// or one the agent lacks, is left out, and so is the hint when nothing of
// it is left. Any other hint is kept as it is.
func agentHint(hint string, has func(tool string) bool) string {
	if !NamesCommand(hint) {
		return hint
	}
	cmds := []HintCommand{operatorLimit}
	for _, c := range toolCalls {
		if has(c.tool) {
			cmds = append(cmds, c.cmd)
		}
	}
	return DropCommands(ReplaceCommands(hint, cmds))
}
