package jail

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Build turns a jail into an image build. Everything that makes a sandbox
// a sandbox stays: the user namespace (as root only: a build needs a
// mapped range), the seccomp filter, no_new_privs, the rlimits and the
// cgroup the caller adds init to. What differs:
//
//   - Spec.Image is the build's root, prepared by the caller with the
//     image's writable layers; its top-level directories are bound
//     writable (nosuid, nodev), and its /etc is its own: no synthesised
//     passwd, group, hosts or hostname, so package scripts may add users.
//   - There is no workspace, outputs, run dir or sidecar: init runs Steps
//     one after the other as the jail's root and exits with the first
//     failing step's status.
//   - The steps keep BuildCaps (what installers need to own files and
//     switch users), still only inside the jail's user namespace.
//   - The jail joins the network namespace of the thread that calls
//     Start instead of getting an empty one: the caller makes one holding
//     only loopback and its egress proxy, the build's only way out. The
//     jail's root holds no capability over it.
//   - The jail dies with the thread that started it (parent-death signal),
//     since nothing adopts a build after a restart.
type Build struct {
	// Steps are argv vectors run in order; argv[0] is looked up on Env's
	// PATH inside the jail.
	Steps [][]string `json:"steps"`
	// Env is every step's whole environment.
	Env []string `json:"env,omitempty"`
}

// StepFailedPrefix starts the line init writes to the build's output
// when a step fails (StepFailed), which the caller may quote.
const StepFailedPrefix = "build step "

// StepFailed is that line for the step argv0 exiting with code.
func StepFailed(argv0 string, code int) string {
	return fmt.Sprintf("%s%s exited with status %d", StepFailedPrefix, argv0, code)
}

func (b *Build) validate(s Spec) error {
	if len(b.Steps) == 0 {
		return errors.New("validate jail spec: a build without steps")
	}
	for _, argv := range b.Steps {
		if len(argv) == 0 || argv[0] == "" {
			return errors.New("validate jail spec: an empty build step")
		}
	}
	if s.Image == "" || !filepath.IsAbs(s.Image) {
		return fmt.Errorf("validate jail spec: build root %q is not an absolute path", s.Image)
	}
	if s.HostIDBase == 0 {
		return errors.New("validate jail spec: a build needs a mapped id range (a root driver)")
	}
	if s.Workspace != "" || s.Outputs != "" || s.WorkspaceTmpfs > 0 || len(s.Binds) > 0 || s.RunDir != "" {
		return errors.New("validate jail spec: a build takes no workspace, outputs, binds or run dir")
	}
	return nil
}
