//go:build unix

package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize delivers SIGWINCH, the terminal's "my size changed", on ch.
func notifyResize(ch chan<- os.Signal) { signal.Notify(ch, syscall.SIGWINCH) }
