package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/boxkite/boxkite/server/local"
)

// cleanupReport is what `boxkite-server cleanup --json` prints.
type cleanupReport struct {
	StateDir  string           `json:"state_dir"`
	Clean     bool             `json:"clean"` // nothing of the stack is left
	Leftovers []local.Leftover `json:"leftovers"`
	Error     string           `json:"error,omitempty"`
}

// runCleanup is `boxkite-server cleanup [--state-dir DIR] [--json]`: it
// removes what a local-driver server left of its state directory, whether
// it stopped cleanly, crashed or was killed (sandboxes, their processes,
// cgroups, disks and loop devices, volume and image mounts), and says
// what is still left and how to remove it. `boxkite down` runs it after
// stopping the server. Run it only when no server uses the directory.
// It exits 0 when nothing is left, 1 otherwise, 2 on a usage error.
func runCleanup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boxkite-server cleanup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", defaultStateDir(getenv), "the server's state `directory`")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: boxkite-server cleanup [--state-dir DIR] [--json]

Remove what a local-driver boxkite-server left of its state directory:
every sandbox (its processes, cgroup, disk and loop device), the volumes'
and images' mounts, and the driver's empty parent cgroups. Data (volumes,
images, the database) stays. Run it only when no server uses the
directory; 'boxkite down' runs it after stopping the server. Prints what
is still left with the command that removes it, and exits 1 if anything is.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if _, err := os.Stat(*stateDir); errors.Is(err, os.ErrNotExist) {
		return printCleanup(stdout, *asJSON, cleanupReport{StateDir: *stateDir, Clean: true, Leftovers: []local.Leftover{}})
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	left, err := local.Cleanup(ctx, local.Config{StateDir: *stateDir, Log: newLogger("warn", stderr)})
	rep := cleanupReport{StateDir: *stateDir, Clean: len(left) == 0, Leftovers: left}
	if rep.Leftovers == nil {
		rep.Leftovers = []local.Leftover{}
	}
	if err != nil {
		rep.Error = err.Error()
	}
	return printCleanup(stdout, *asJSON, rep)
}

func printCleanup(w io.Writer, asJSON bool, rep cleanupReport) int {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		for _, l := range rep.Leftovers {
			fmt.Fprintf(w, "left: %s %s\n  remove with: %s\n", l.Kind, l.What, l.Remove)
		}
		if rep.Error != "" {
			fmt.Fprintf(w, "error: %s\n", rep.Error)
		}
		if rep.Clean && rep.Error == "" {
			fmt.Fprintf(w, "nothing of %s is left on the host\n", rep.StateDir)
		}
	}
	if !rep.Clean {
		return 1
	}
	return 0
}
