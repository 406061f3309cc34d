package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestStartDeps: packages this binary does without because their init
// would run in every start of it, every jail's start among them (issue 27:
// runtime/metrics builds its table of descriptions there, ~8 of a jail's
// ~420 page faults).
func TestStartDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, pkg := range []string{"runtime/metrics"} {
		if slices.Contains(deps, pkg) {
			t.Errorf("boxkite-sidecar imports %s, whose init runs in every jail's start", pkg)
		}
	}
}
