package envd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestEndEventMemoryLimit: a command the kernel's OOM killer killed at the
// sandbox's memory limit says so in the end event's error, which the E2B
// SDK makes CommandExitError's message; envd's status is kept. The count
// is asked only for a SIGKILL nobody here sent (or a shell's exit 137),
// never for a kill of ours or another ending.
func TestEndEventMemoryLimit(t *testing.T) {
	const note = " " + memoryLimitNote
	for _, tc := range []struct {
		name      string
		code      int
		signal    int
		ours      bool // killed through the facade
		oom       bool // what the driver's count says
		wantError string
		wantAsked bool
	}{
		{"sigkill at the limit", 137, 9, false, true, "signal: killed" + note, true},
		{"shell exit 137 at the limit", 137, 0, false, true, "exit status 137" + note, true},
		{"kill -9", 137, 9, false, false, "signal: killed", true},
		{"killed through the facade", 137, 9, true, true, "signal: killed", false},
		{"sigterm", 143, 15, false, true, "signal: terminated", false},
		{"exit 1", 1, 0, false, true, "exit status 1", false},
		{"exit 0", 0, 0, false, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &proc{killed: tc.ours}
			asked := false
			exit := &api.InteractiveControl{Type: api.InteractiveExit, ExitCode: &tc.code, Signal: tc.signal}
			end := p.endEvent(exit, func() bool { asked = true; return tc.oom })
			if diff := cmp.Diff(tc.wantError, end.GetError()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if want := strings.TrimSuffix(tc.wantError, note); tc.wantError != "" && end.GetStatus() != want {
				t.Errorf("status = %q, want envd's %q", end.GetStatus(), want)
			}
			if asked != tc.wantAsked {
				t.Errorf("memory kills asked = %v, want %v", asked, tc.wantAsked)
			}
		})
	}
}
