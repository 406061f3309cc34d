package sidecar

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryOutsideWorkspace: a taken-over bash keeps its history in the
// sandbox's /tmp, not among the user's files in the workspace (HOME).
func TestHistoryOutsideWorkspace(t *testing.T) {
	t.Parallel()
	ws := "/workspace"
	var hist string
	for _, kv := range SafeEnv(ws) {
		if v, ok := strings.CutPrefix(kv, "HISTFILE="); ok {
			hist = v
		}
	}
	if hist == "" || !filepath.IsAbs(hist) || strings.HasPrefix(filepath.Clean(hist)+"/", ws+"/") {
		t.Errorf("HISTFILE = %q, want an absolute path outside %s", hist, ws)
	}
}
