// Command bastion is boxkite-bastion, the SSH front door to sandboxes:
// `ssh <sandbox-id>@host -p 2222` opens the sandbox's shared terminal, and
// `ssh <sandbox-id>@host 'cmd'` runs cmd there (stdin streamed, on a PTY
// when asked) and returns its exit status, and the sftp subsystem serves
// the sandbox's files to scp, sftp and rsync.
// It holds no sandbox credentials: it is a client of the control plane,
// which it asks for a single-use takeover token per session. See
// docs/bastion.md; run `boxkite-bastion --help` for flags and environment.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stderr))
}
