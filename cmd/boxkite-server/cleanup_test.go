package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestCleanupNothingThere: cleanup of a state directory that holds
// nothing (or does not exist) reports it clean and exits 0; a bad flag
// is a usage error. internal/faulttest runs it on real leftovers through
// `boxkite down`.
func TestCleanupNothingThere(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{filepath.Join(t.TempDir(), "never-made"), t.TempDir()} {
		var stdout, stderr bytes.Buffer
		code := runCleanup(context.Background(), []string{"--state-dir", dir, "--json"}, envFunc(nil), &stdout, &stderr)
		var rep cleanupReport
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || code != 0 || !rep.Clean || len(rep.Leftovers) != 0 || rep.StateDir != dir {
			t.Errorf("cleanup of %s = %d, %+v (%v); stderr %s", dir, code, rep, err, stderr.String())
		}
	}
	var out bytes.Buffer
	if code := runCleanup(context.Background(), []string{"--nope"}, envFunc(nil), &out, &out); code != 2 {
		t.Errorf("a bad flag exits %d, want 2", code)
	}
}
