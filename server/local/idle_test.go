package local

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestIdleSidecarSleeps: an idle jail's sidecar (its init too, issue 27)
// sleeps, also after its orphan reaper's first timed wake
// (jail.ReapOrphans sleeps 5 s at a time). Takes about 7 s.
func TestIdleSidecarSleeps(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "idle")
	run(t, ep, "true")
	st, err := readState(d.sandboxDir("idle"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // past the reaper's first wake
	before := switches(t, st.PID)
	time.Sleep(time.Second)
	// The main thread sleeps in the reaper: a loop that does not sleep
	// switches about a hundred times a second on this machine.
	used := switches(t, st.PID) - before
	t.Logf("idle sidecar's main thread: %d context switches in 1 s", used)
	if used > 5 {
		t.Errorf("the idle sidecar's main thread switched %d times in 1 s; it should sleep", used)
	}
}

// switches is the context switches of a process's main thread.
func switches(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
			var c int
			if _, err := fmt.Sscan(v, &c); err != nil {
				t.Fatal(err)
			}
			n += c
		}
	}
	return n
}
