// Package handoff moves a local Claude Code, Codex, opencode or Gemini CLI
// session into a sandbox: one Adapter per tool finds the session on this
// machine and bundles its files with every recorded working directory
// rewritten to the sandbox's, and Prepare and Transfer stage the bundle,
// stream the working tree and the session into the sandbox as one
// archive (merging the tool's state files with the sandbox's own), and
// leave in HandoffDir a script that checks the tool is there, starts it
// with its resume arguments with the credentials of a 0600 file (removed
// as the tool starts), and says how to retry. Agents gives each tool's
// npm package (the recipe of its image), command and model API host;
// LaunchFor and Rearm serve `boxkite handoff --retry`.
//
// It links client/api only: the sandbox is reached through the small
// Sandbox interface, which the CLI satisfies with the client.
package handoff
