//go:build linux

package local

import (
	"strings"
	"syscall"
	"testing"
)

// TestHostUmask: a sandbox is the same whatever the umask of the server
// that starts it. Under a hardened host's 077 the jail's /dev was 0700,
// so the sandbox user could open neither /dev/null nor /dev/urandom, and
// its commands created files under 077. Not parallel: the umask is the
// process's.
func TestHostUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })
	d := newDriver(t)
	ep := create(t, d, "umask")
	res := run(t, ep, "echo x > /dev/null && head -c 4 /dev/urandom | wc -c && stat -c %a /dev /dev/pts && umask")
	if got, want := strings.Fields(res.Stdout), []string{"4", "755", "755", "0022"}; res.ExitCode != 0 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("in a sandbox of a server with umask 077: exit %d, stdout %q, stderr %q; want %q", res.ExitCode, res.Stdout, res.Stderr, want)
	}
}
