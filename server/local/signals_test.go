//go:build linux

package local

import (
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestSandboxSignalsDefault: a server started with SIGHUP and SIGINT
// ignored (under nohup, or in the background of a script) does not pass
// the ignoring on to its sandboxes' commands, which could then not be hung
// up or interrupted by the signals `boxkite exec`, the bastion and the API
// forward. Not parallel: the ignoring is the test process's.
func TestSandboxSignalsDefault(t *testing.T) {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT)
	t.Cleanup(func() { signal.Reset(syscall.SIGHUP, syscall.SIGINT) })
	d := newDriver(t)
	ep := create(t, d, "signals-default")
	res := run(t, ep, "grep '^SigIgn:' /proc/self/status")
	hex, ok := strings.CutPrefix(strings.TrimSpace(res.Stdout), "SigIgn:")
	if !ok {
		t.Fatalf("status line %q, want SigIgn", res.Stdout)
	}
	ignored, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
	if err != nil {
		t.Fatalf("SigIgn %q: %v", hex, err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if ignored&(1<<(sig-1)) != 0 {
			t.Errorf("a command in the sandbox ignores %v (SigIgn %s)", sig, strings.TrimSpace(hex))
		}
	}
}
