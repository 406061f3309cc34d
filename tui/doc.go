// Package tui holds the bubbletea models of boxkite tui: the sandbox browser,
// detail view and live log viewer. Not built yet (issue 10).
package tui
