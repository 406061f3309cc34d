package tools

import (
	"regexp"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// toolCalls are the boxkite CLI commands the API's hints name, each as the
// tool that does the same for an agent ($1: the id the command names).
var toolCalls = []struct {
	cli  *regexp.Regexp
	tool string
}{
	{regexp.MustCompile("`boxkite session create`"), "`create_sandbox`"},
	{regexp.MustCompile("`boxkite session ls`"), "`list_sandboxes`"},
	{regexp.MustCompile("`boxkite session get ([^`]+)`"), "`get_sandbox` with session_id $1"},
	{regexp.MustCompile("`boxkite session get`"), "`get_sandbox`"},
	{regexp.MustCompile("`boxkite session resume ([^`]+)`"), "`resume_sandbox` with session_id $1"},
	{regexp.MustCompile("`boxkite session resume`"), "`resume_sandbox`"},
	{regexp.MustCompile("`boxkite session pause`"), "`pause_sandbox`"},
	{regexp.MustCompile("`boxkite session fork ([^`]+)`"), "`fork_sandbox` with session_id $1"},
	{regexp.MustCompile("`boxkite session rm ([^`]+)`"), "`destroy_sandbox` with session_id $1"},
	{regexp.MustCompile("`boxkite session rm`"), "`destroy_sandbox`"},
	{regexp.MustCompile("`boxkite session snapshot`"), "`snapshot_sandbox`"},
	{regexp.MustCompile("`boxkite images ls`"), "`list_sandbox_images`"},
	{regexp.MustCompile("`boxkite images rm ID`"), "`delete_sandbox_image`"},
	{regexp.MustCompile("`boxkite volumes ls`"), "`list_sandbox_volumes`"},
	{regexp.MustCompile("`boxkite volumes rm ID`"), "`delete_sandbox_volume`"},
	{regexp.MustCompile("`boxkite mcp-connections ls`"), "`list_mcp_connections`"},
	{regexp.MustCompile(`raise the limit \(boxkite doctor says how\)`), "ask the server's operator to raise the limit"},
}

// cliCommand finds a boxkite CLI command a hint names: quoted
// ("`boxkite session ls`") or in parentheses ("(boxkite files cp)").
var cliCommand = regexp.MustCompile("[`(]boxkite [a-z]")

// cliAside is a parenthesised aside that names a CLI command.
var cliAside = regexp.MustCompile(" ?\\([^()]*[`(]boxkite [a-z][^()]*\\)")

// codeBadResponse is client.CodeBadResponse (tools does not import the
// client): the server URL answered with something that is not boxkite. Its
// hint is the client's, not the API's, for whoever set the URL up (the
// CLI's config a person runs `boxkite config show` for), and stays.
const codeBadResponse = "bad_response"

// refusalHint is e's hint as an agent reads it: agentHint of the API's.
func refusalHint(e *api.Error) string {
	if e.Code == codeBadResponse {
		return e.Hint
	}
	return agentHint(e.Hint)
}

// agentHint is a hint of the API's as an agent reads it. The API's hints
// name boxkite CLI commands, which an agent calling tools cannot run: each
// becomes the tool that does the same (`list_sandboxes` for `boxkite
// session ls`); an aside or a "; "-separated clause that still names a
// command with no such tool is left out, and so is the hint when nothing
// of it is left. Any other hint is kept as it is.
func agentHint(hint string) string {
	if !cliCommand.MatchString(hint) {
		return hint
	}
	for _, c := range toolCalls {
		hint = c.cli.ReplaceAllString(hint, c.tool)
	}
	hint = cliAside.ReplaceAllString(hint, "")
	var kept []string
	for clause := range strings.SplitSeq(hint, "; ") {
		if !cliCommand.MatchString(clause) && !strings.Contains(clause, "boxkite doctor") {
			kept = append(kept, clause)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "; "))
}
