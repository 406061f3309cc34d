// Package tui holds the bubbletea models of boxkite tui: the sandbox
// browser, the detail view, the live log viewer, the exec prompt and the
// create form. The models talk to the control plane through Source, a small
// interface the CLI implements over package client, so they can be driven
// by messages in tests without a server. Every call to a Source runs in a
// tea.Cmd; Update never blocks.
package tui
