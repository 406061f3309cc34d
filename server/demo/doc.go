// Package demo is the demo playground (off unless the server is started
// with --demo-playground): sandboxes anyone can try from a public
// instance's landing page without a key, with the reference's limits —
// each lives at most 4 minutes, at most 3 exist at once, an exec's
// output is capped at 20 KiB per stream, and each client address may
// create 3 a minute. They belong to a demo account of their own and are
// driven through the API in-process, so quotas, the allowlist and the
// audit log apply to them as to any account's. docs/demo.md.
package demo
