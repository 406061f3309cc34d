// Package handoffe2e holds the end-to-end tests of boxkite handoff: with
// the real coding-agent CLIs (their images built from npm, real
// sandboxes, the CLI on a terminal), and of a working tree's nested git
// repositories in a real sandbox. It is a package of its own so its long
// run (a build per agent, Gemini CLI's retries) has a test binary, and a
// timeout, of its own.
package handoffe2e
