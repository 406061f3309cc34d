package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
)

// execIn runs a command line in sandbox id (handoff.Runner); an exit
// status other than 0 is an error, with what it said.
func execIn(c *client.Client, id string) handoff.Runner {
	return func(ctx context.Context, command string) (string, error) {
		res, err := c.Exec(ctx, id, api.ExecRequest{Command: command, Timeout: 120})
		if err != nil {
			return "", err
		}
		if res.ExitCode != 0 {
			return "", fmt.Errorf("exit status %d: %s", res.ExitCode, firstLines(strings.TrimSpace(res.Stderr), 3))
		}
		return res.Stdout, nil
	}
}

// changedError refuses a handoff into sandbox id that would overwrite
// the files changed there since the last handoff into it (changed,
// relative to handoff.SandboxHome), naming a few.
func changedError(id string, changed []string) error {
	const shown = 5
	names := make([]string, 0, shown)
	for _, rel := range changed[:min(len(changed), shown)] {
		names = append(names, handoff.SandboxHome+"/"+rel)
	}
	more := ""
	if len(changed) > shown {
		more = fmt.Sprintf(" and %d more", len(changed)-shown)
	}
	return &hintError{
		err: fmt.Errorf("sandbox %s has %d %s changed since the last handoff into it, which this handoff would overwrite: %s%s",
			id, len(changed), plural(len(changed), "file"), strings.Join(names, ", "), more),
		hint: fmt.Sprintf("to keep them, copy them out first ('boxkite files cp %s:PATH .') or commit them there and pull; to replace them, hand off again with --force", id),
	}
}
