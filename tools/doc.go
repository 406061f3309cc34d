// Package tools is the agent tool surface: each tool is a name, a description,
// a JSON schema and a handler over a small Sandbox interface, with exporters to
// the OpenAI, Anthropic, Gemini and MCP shapes. Not built yet (issue 3).
package tools
