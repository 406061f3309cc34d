//go:build !unix

package cli

import "os"

// notifyResize does nothing where terminals have no SIGWINCH; the size
// sent when attaching stays.
func notifyResize(chan<- os.Signal) {}
