package tui

import (
	"context"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/boxkite/boxkite/client/api"
)

// Source is what the TUI needs from the control plane. *client.Client has
// every method but Attach; the CLI adds that, since attaching hands the
// terminal over and so belongs with the CLI's terminal handling.
type Source interface {
	ListSandboxes(ctx context.Context, activeOnly bool) ([]api.Sandbox, error)
	// NewestSandboxes returns the account's newest limit sandboxes, ended
	// ones included (GET /v1/sandboxes?limit=), and whether there are
	// more: one page, however many the account has had.
	NewestSandboxes(ctx context.Context, limit int) (sbs []api.Sandbox, more bool, err error)
	Sandbox(ctx context.Context, id string) (*api.Sandbox, error)
	CreateSandbox(ctx context.Context, req api.CreateSandboxRequest) (*api.Sandbox, error)
	DeleteSandbox(ctx context.Context, id string) error
	// PauseSandbox and ResumeSandbox pause a sandbox (mode "" is freeze)
	// and resume it (issue 22).
	PauseSandbox(ctx context.Context, id, mode string) (*api.Sandbox, error)
	ResumeSandbox(ctx context.Context, id string) (*api.ResumeResult, error)
	SandboxStats(ctx context.Context, id string) (*api.SandboxStats, error)
	// Host is the host's disk against its free-space watermark and
	// whether the audit log can be written (admin keys; an error just
	// leaves them out).
	Host(ctx context.Context) (*api.HostStatus, error)
	Processes(ctx context.Context, id string) (*api.ProcessList, error)
	Log(ctx context.Context, id string, limit, offset int) (*api.LogPage, error)
	// SyncStatus is the sandbox's sync to object storage (docs/storage.md);
	// an error (no storage configured) leaves it out of the detail.
	SyncStatus(ctx context.Context, id string) (*api.SyncStatus, error)
	// WatchLog calls fn with each audit entry of sandbox id as it is
	// written, after lastEventID ("" starts with the newest ones), until
	// ctx ends or the stream cannot be resumed.
	WatchLog(ctx context.Context, id, lastEventID string, fn func(api.LogEntry) error) error
	Exec(ctx context.Context, id string, req api.ExecRequest) (*api.ExecResult, error)
	// Attach returns the command that connects this terminal to the
	// sandbox's shared terminal until the user detaches; tea.Exec runs it
	// with the terminal released.
	Attach(id string) tea.ExecCommand
}

// ShellExited is what an Attach command's Run returns when the sandbox's
// shell exited (rather than being detached from): the browser comes back
// and says its exit code, as boxkite attach exits with it.
type ShellExited struct {
	Code int // 128+N when signal N ended it
}

func (e *ShellExited) Error() string { return fmt.Sprintf("the shell exited (exit code %d)", e.Code) }
