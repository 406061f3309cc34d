package sandbox

import (
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// copyElsewhereHint is the hint to an operation that needs a copy another
// server keeps (model.ErrCopyElsewhere); bucket when object storage would
// also do (snapshots: not paused workspaces).
func copyElsewhereHint(bucket bool) string {
	fix := "shares the state directory between replicas (a ReadWriteMany claim)"
	if bucket {
		fix = "configures object storage, or " + fix
	}
	return "retry: another replica may answer; for good, the operator " + fix + ` (docs/kubernetes.md, "The state directory")`
}

// pauseModeHint names the pause modes that work on a server whose driver
// reports modes, for the answer to a mode that does not.
func pauseModeHint(modes map[string]string) string {
	var work []string
	for _, m := range []string{api.PauseFreeze, api.PauseFilesystem, api.PauseCheckpoint} {
		if why, ok := modes[m]; ok && why == "" {
			work = append(work, m)
		}
	}
	if len(work) == 0 {
		return "this server cannot pause sandboxes in any mode; the operator can run `boxkite doctor` on the server's host to see what each mode needs"
	}
	return "pause with mode " + strings.Join(work, " or ") + " instead (the CLI: `--mode " + work[0] + "`)"
}
