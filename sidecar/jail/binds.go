package jail

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// A Bind is a host directory bound read-write into the jail, e.g. a volume.
type Bind struct {
	Source string `json:"source"` // host path
	Target string `json:"target"` // jail path, below WorkspaceDir
}

// validateBinds keeps binds below /workspace, apart from each other: the
// builder places them after the workspace, which must not cover them.
func validateBinds(binds []Bind) error {
	var targets []string
	for _, b := range binds {
		if !filepath.IsAbs(b.Source) {
			return fmt.Errorf("validate jail spec: bind source %q is not an absolute path", b.Source)
		}
		if filepath.Clean(b.Target) != b.Target || !strings.HasPrefix(b.Target, WorkspaceDir+"/") {
			return fmt.Errorf("validate jail spec: bind target %q is not a clean path below %s", b.Target, WorkspaceDir)
		}
		targets = append(targets, b.Target)
	}
	slices.Sort(targets)
	for i := 1; i < len(targets); i++ {
		if targets[i] == targets[i-1] || strings.HasPrefix(targets[i], targets[i-1]+"/") {
			return fmt.Errorf("validate jail spec: bind targets %s and %s overlap", targets[i-1], targets[i])
		}
	}
	return nil
}

// EgressSocketName is the egress proxy's socket in the run dir of a
// sandbox granted egress (host side: Spec.RunDir; jail side: RunDir, read
// only). The driver makes it there, owned by the jail's root, 0600: only
// the sidecar can connect, and it forwards a loopback port to it for
// commands.
const EgressSocketName = "egress.sock"
