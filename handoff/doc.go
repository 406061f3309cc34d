// Package handoff moves a local Claude Code, Codex, opencode or Gemini CLI
// session into a sandbox: one Adapter per tool finds the session on this machine and
// bundles its files with their recorded working directory rewritten to the
// sandbox's, and Prepare and Transfer stage the bundle, stream the working
// tree and the session into the sandbox as one archive, and leave a script
// there that sources the tool's credentials from a 0600 file and resumes.
//
// It links client/api only: the sandbox is reached through the small
// Uploader interface, which the CLI satisfies with the client.
package handoff
