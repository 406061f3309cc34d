// Package handoff moves a local Claude Code, Codex or opencode session into a
// sandbox. Not built yet (issue 11).
package handoff
