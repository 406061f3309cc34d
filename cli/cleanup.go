package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
)

// cleanupReport is what `boxkite-server cleanup --json` prints.
type cleanupReport struct {
	StateDir  string            `json:"state_dir"`
	Clean     bool              `json:"clean"`
	Leftovers []cleanupLeftover `json:"leftovers"`
	Error     string            `json:"error,omitempty"`
}

type cleanupLeftover struct {
	Kind   string `json:"kind"`
	What   string `json:"what"`
	Remove string `json:"remove"`
}

// cleanUpLocal removes what the local server left on the host once it is
// stopped, whatever state it stopped in (a crash, a kill, a host out of
// processes): it runs `boxkite-server cleanup` on the server's state
// directory, which deletes every sandbox (processes, cgroups, disks and
// loop devices) and unmounts volumes and images. When something is left,
// the error lists it with the command that removes it.
func cleanUpLocal(ctx context.Context, p localPaths) error {
	if _, err := os.Stat(p.state); errors.Is(err, fs.ErrNotExist) {
		return nil // the server never ran here
	}
	bin, err := findCompanion(serverBinary)
	if err != nil {
		return fmt.Errorf("clean up after the local server: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "cleanup", "--state-dir", p.state, "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep cleanupReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if runErr != nil {
			msg = strings.TrimSpace(runErr.Error() + "\n" + msg)
		}
		return &hintError{
			err:  fmt.Errorf("clean up after the local server: %s", msg),
			hint: fmt.Sprintf("run '%s cleanup --state-dir %s' once the host can start processes again; it says what is left and how to remove it", bin, p.state),
		}
	}
	if rep.Clean {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the local server left %d things on the host that could not be removed:", len(rep.Leftovers))
	var cmds []string
	for _, l := range rep.Leftovers {
		fmt.Fprintf(&b, "\n  %s %s", l.Kind, l.What)
		cmds = append(cmds, l.Remove)
	}
	if rep.Error != "" {
		fmt.Fprintf(&b, "\n  (%s)", rep.Error)
	}
	return &hintError{
		err:  errors.New(b.String()),
		hint: "remove them as root with:\n    " + strings.Join(cmds, "\n    ") + "\nthen run 'boxkite down' again to check",
	}
}
