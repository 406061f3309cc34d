package client

import (
	"context"

	"github.com/boxkite/boxkite/client/api"
)

// A Sandbox is a Client bound to one sandbox: the same calls without the id.
// Its method set is what the agent tools (package tools) need of a sandbox,
// so a *Sandbox can be handed to them as it is.
type Sandbox struct {
	c  *Client
	id string
}

// Bind returns a handle on sandbox id. It makes no call; a wrong id shows
// up as a not_found *api.Error from the first call.
func (c *Client) Bind(id string) *Sandbox {
	return &Sandbox{c: c, id: id}
}

// ID is the sandbox id the handle is bound to.
func (s *Sandbox) ID() string { return s.id }

// Client is the client the handle calls through.
func (s *Sandbox) Client() *Client { return s.c }

// Exec runs a command and returns its result once it exits; see Client.Exec.
func (s *Sandbox) Exec(ctx context.Context, req api.ExecRequest) (*api.ExecResult, error) {
	return s.c.Exec(ctx, s.id, req)
}

// WriteFile creates or overwrites a text file; see Client.WriteFile.
func (s *Sandbox) WriteFile(ctx context.Context, req api.FileCreateRequest) (*api.FileCreateResult, error) {
	return s.c.WriteFile(ctx, s.id, req)
}

// View reads a file or lists a directory; see Client.View.
func (s *Sandbox) View(ctx context.Context, req api.ViewRequest) (*api.ViewResult, error) {
	return s.c.View(ctx, s.id, req)
}

// StrReplace edits a file in place; see Client.StrReplace.
func (s *Sandbox) StrReplace(ctx context.Context, req api.StrReplaceRequest) (*api.StrReplaceResult, error) {
	return s.c.StrReplace(ctx, s.id, req)
}

// List lists a directory; see Client.Ls.
func (s *Sandbox) List(ctx context.Context, req api.LsRequest) (*api.LsResult, error) {
	return s.c.Ls(ctx, s.id, req)
}

// Glob finds files by pattern; see Client.Glob.
func (s *Sandbox) Glob(ctx context.Context, req api.GlobRequest) (*api.GlobResult, error) {
	return s.c.Glob(ctx, s.id, req)
}

// Grep searches file contents; see Client.Grep.
func (s *Sandbox) Grep(ctx context.Context, req api.GrepRequest) (*api.GrepResult, error) {
	return s.c.Grep(ctx, s.id, req)
}

// Watch waits for changes in a directory; see Client.Watch.
func (s *Sandbox) Watch(ctx context.Context, req api.WatchRequest) (*api.WatchResult, error) {
	return s.c.Watch(ctx, s.id, req)
}

// PresentFiles hands files to the user; see Client.PresentFiles.
func (s *Sandbox) PresentFiles(ctx context.Context, req api.PresentFilesRequest) (*api.PresentFilesResult, error) {
	return s.c.PresentFiles(ctx, s.id, req)
}

// InterpreterExec runs code in the persistent interpreter; see Client.InterpreterExec.
func (s *Sandbox) InterpreterExec(ctx context.Context, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	return s.c.InterpreterExec(ctx, s.id, req)
}

// StartProcess starts a background process; see Client.StartProcess.
func (s *Sandbox) StartProcess(ctx context.Context, req api.ProcessStartRequest) (*api.ProcessStarted, error) {
	return s.c.StartProcess(ctx, s.id, req)
}

// ProcessOutput reads a background process's output; see Client.ProcessOutput.
func (s *Sandbox) ProcessOutput(ctx context.Context, pid string, sinceOffset int64) (*api.ProcessOutput, error) {
	return s.c.ProcessOutput(ctx, s.id, pid, sinceOffset)
}

// SendProcessInput writes to a background process's stdin; see Client.ProcessInput.
func (s *Sandbox) SendProcessInput(ctx context.Context, pid, data string) (*api.ProcessInputResult, error) {
	return s.c.ProcessInput(ctx, s.id, pid, data)
}

// StopProcess stops a background process; see Client.StopProcess.
func (s *Sandbox) StopProcess(ctx context.Context, pid string) (*api.ProcessStopResult, error) {
	return s.c.StopProcess(ctx, s.id, pid)
}

// ListProcesses lists the background processes; see Client.Processes.
func (s *Sandbox) ListProcesses(ctx context.Context) (*api.ProcessList, error) {
	return s.c.Processes(ctx, s.id)
}

// LSPStart starts a language server; see Client.LSPStart.
func (s *Sandbox) LSPStart(ctx context.Context, req api.LSPStartRequest) (*api.LSPStarted, error) {
	return s.c.LSPStart(ctx, s.id, req)
}

// LSPOpen opens a document in a language server; see Client.LSPOpen.
func (s *Sandbox) LSPOpen(ctx context.Context, lspID string, req api.LSPOpenRequest) error {
	return s.c.LSPOpen(ctx, s.id, lspID, req)
}

// LSPCompletion asks a language server for completions; see Client.LSPCompletion.
func (s *Sandbox) LSPCompletion(ctx context.Context, lspID string, req api.LSPCompletionRequest) (*api.LSPCompletionResult, error) {
	return s.c.LSPCompletion(ctx, s.id, lspID, req)
}

// LSPStop stops a language server; see Client.LSPStop.
func (s *Sandbox) LSPStop(ctx context.Context, lspID string) error {
	return s.c.LSPStop(ctx, s.id, lspID)
}
