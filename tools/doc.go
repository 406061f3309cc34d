// Package tools is the agent tool surface: each tool is a name, a description,
// a JSON schema and a handler over a small Sandbox interface, with exporters to
// the OpenAI, Anthropic, Gemini and MCP shapes.
//
// Default returns the reference's 15 default tools, Git its 8 git tools and
// LSP the language-server tools, and MCP the 31 tools of boxkite-mcp and the
// server's /mcp/ (account tools over a Provider, plus the sandbox tools with
// a session_id). Handlers answer with text an agent can act
// on: a user mistake, a failing command or an API refusal is a result
// ("Error (exit code 2): …"), not a Go error. Call turns the remaining Go
// errors (transport failures) into text too, so a caller never has to. An
// API refusal's hint names tools where the API's names boxkite CLI
// commands, only tools of the set Call runs from (HintCommand is the
// matcher, shared with the E2B surface's SDK calls).
//
// The CLI binds a *client.Client to one sandbox to satisfy Sandbox; the
// server satisfies it in-process for its /mcp/ endpoint. This package
// imports only client/api and the standard library.
package tools
