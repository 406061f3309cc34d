package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Lifecycle pauses, resumes, snapshots, restores and forks sandboxes
// (issue 22); *client.Client satisfies it.
type Lifecycle interface {
	PauseSandbox(ctx context.Context, id, mode string) (*api.Sandbox, error)
	ResumeSandbox(ctx context.Context, id string) (*api.ResumeResult, error)
	CreateSnapshot(ctx context.Context, sandboxID, label string) (*api.Snapshot, error)
	RestoreSnapshot(ctx context.Context, id, label string) (*api.Sandbox, error)
	ForkSandbox(ctx context.Context, id string, count int) ([]api.Sandbox, error)
}

// lifecycleTools are the five tools over Lifecycle that follow the 26 of
// reference §5.1 in MCP.
func (m mcpTools) lifecycleTools() []Tool {
	return []Tool{m.pauseSandbox(), m.resumeSandbox(), m.snapshotSandbox(), m.restoreSnapshot(), m.forkSandbox()}
}

func (m mcpTools) pauseSandbox() Tool {
	schema := object(sessionParam(),
		strParam("mode", "freeze (default: processes stop at once, memory kept), filesystem (processes end, files kept) or checkpoint.").
			oneOf(api.PauseFreeze, api.PauseFilesystem, api.PauseCheckpoint))
	return accountTool("pause_sandbox",
		"Pause a sandbox: its lifetime stops counting until resume_sandbox; calls to it are refused meanwhile.",
		schema, func(ctx context.Context, in *struct {
			SessionID string `json:"session_id"`
			Mode      string `json:"mode"`
		},
		) (string, error) {
			if msg := checkID("session_id", in.SessionID); msg != "" {
				return msg, nil
			}
			sb, err := m.p.PauseSandbox(ctx, in.SessionID, in.Mode)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Paused sandbox %s (paused_with: %s)", sb.ID, sb.PausedWith), nil
		})
}

func (m mcpTools) resumeSandbox() Tool {
	return byID("resume_sandbox", "Resume a paused sandbox; same id, files and (after a freeze) processes.",
		"session_id", "The id of the paused sandbox.", func(ctx context.Context, id string) (string, error) {
			res, err := m.p.ResumeSandbox(ctx, id)
			if err != nil {
				return "", err
			}
			lines := []string{"Resumed sandbox " + sandboxText(res.Sandbox)}
			for _, p := range res.Processes {
				line := fmt.Sprintf("- process %s %s", p.ProcessID, p.Status)
				if p.NewProcessID != "" {
					line += " as " + p.NewProcessID
				}
				lines = append(lines, line+": "+p.Command)
			}
			return strings.Join(lines, "\n"), nil
		})
}

func (m mcpTools) snapshotSandbox() Tool {
	schema := object(sessionParam(), strParam("label", "A name for the snapshot."))
	return accountTool("snapshot_sandbox",
		"Snapshot a sandbox's files (/workspace and outputs) and return the snapshot's id; restore_snapshot makes a new sandbox from it.",
		schema, func(ctx context.Context, in *struct {
			SessionID string `json:"session_id"`
			Label     string `json:"label"`
		},
		) (string, error) {
			if msg := checkID("session_id", in.SessionID); msg != "" {
				return msg, nil
			}
			sn, err := m.p.CreateSnapshot(ctx, in.SessionID, in.Label)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Created snapshot %s of sandbox %s (status: %s, size_bytes: %d)", sn.ID, sn.SessionID, sn.Status, sn.SizeBytes), nil
		})
}

func (m mcpTools) restoreSnapshot() Tool {
	schema := object(strParam("snapshot_id", "The id of the snapshot, as snapshot_sandbox returned it.").req(),
		strParam("label", "A name for the new sandbox."))
	return accountTool("restore_snapshot",
		"Create a new sandbox whose files are a snapshot's, and return its id.",
		schema, func(ctx context.Context, in *struct {
			SnapshotID string `json:"snapshot_id"`
			Label      string `json:"label"`
		},
		) (string, error) {
			if msg := checkID("snapshot_id", in.SnapshotID); msg != "" {
				return msg, nil
			}
			sb, err := m.p.RestoreSnapshot(ctx, in.SnapshotID, in.Label)
			if err != nil {
				return "", err
			}
			return "Restored snapshot " + in.SnapshotID + " into sandbox " + sandboxText(*sb), nil
		})
}

func (m mcpTools) forkSandbox() Tool {
	schema := object(sessionParam(), intParam("count", "How many children (default 1, max 10).", 1, 1, 10))
	return accountTool("fork_sandbox",
		"Fork a sandbox: each child starts from its files as they are now; writes in one are seen by no other. Returns the children's ids.",
		schema, func(ctx context.Context, in *struct {
			SessionID string `json:"session_id"`
			Count     int    `json:"count"`
		},
		) (string, error) {
			if msg := checkID("session_id", in.SessionID); msg != "" {
				return msg, nil
			}
			children, err := m.p.ForkSandbox(ctx, in.SessionID, in.Count)
			if err != nil {
				return "", err
			}
			return "Forked sandbox " + in.SessionID + " into:\n" + listText(children, "no children", sandboxText), nil
		})
}
