//go:build linux && !amd64

package jail

import (
	"github.com/boxkite/boxkite/sidecar/jail/internal/seccomppolicy"
	"golang.org/x/sys/unix"
)

// seccompProgram assembles the jail's filter: no table of it is made
// ahead for this architecture (see seccomp_amd64.go).
func seccompProgram(nested bool) ([]unix.SockFilter, uint32, error) {
	return seccomppolicy.Program(nested)
}
