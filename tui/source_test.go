package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/boxkite/boxkite/client/api"
)

// epoch is the fixed "now" of the tests.
var epoch = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

// fakeSource is an in-memory control plane. Log entries pushed with
// appendEntry reach open watches.
type fakeSource struct {
	mu        sync.Mutex
	sandboxes []api.Sandbox
	entries   map[string][]api.LogEntry
	watchers  []chan api.LogEntry
	down      bool  // every call fails as if the server were gone
	refuse    error // every call fails with it, as an API error would
	created   []api.CreateSandboxRequest
	deleted   []string
	paused    []string // the statuses PauseSandbox and ResumeSandbox set, in order
	execs     []string
	attached  []string
	host      api.HostStatus
	sync      map[string]*api.SyncStatus // none: no object storage
	listed    []string                   // the list reads: "active_only=true", "limit=200"
}

var errDown = errors.New("cannot reach the boxkite server at http://127.0.0.1:8090: connection refused")

func newFakeSource() *fakeSource {
	exit0, exit2 := 0, 2
	f := &fakeSource{
		sandboxes: []api.Sandbox{
			{
				ID: "0b8c2f6e-1111-4a5b-9c0d-000000000001", Status: api.StatusActive, Label: "build", Size: api.SizeMedium,
				LifetimeMinutes: 60, CreatedAt: epoch.Add(-12 * time.Minute), ExpiresAt: epoch.Add(48 * time.Minute),
			},
			{
				ID: "7f3a9d21-2222-4a5b-9c0d-000000000002", Status: api.StatusActive, Label: "scratch", Size: api.SizeSmall,
				LifetimeMinutes: 30, CreatedAt: epoch.Add(-3 * time.Minute), ExpiresAt: epoch.Add(27 * time.Minute),
			},
			{
				ID: "c41d0e88-3333-4a5b-9c0d-000000000003", Status: api.StatusDestroyed, Size: api.SizeSmall,
				CreatedAt: epoch.Add(-26 * time.Hour), ExpiresAt: epoch.Add(-25 * time.Hour), DestroyReason: "expired",
			},
		},
		entries: map[string][]api.LogEntry{},
		host: api.HostStatus{
			Driver: "local", Audit: api.HostAudit{Writable: true},
			Disk: &api.HostDisk{Path: "/root/.boxkite/server", TotalBytes: 250 << 30, FreeBytes: 70 << 30, WatermarkBytes: 1 << 30, FreezeBelowBytes: 512 << 20},
		},
	}
	id := f.sandboxes[0].ID
	f.entries[id] = []api.LogEntry{
		entry(id, 1, "exec", `{"command":"go build ./...","timeout":300}`, &exit0, 4210),
		entry(id, 2, "file_create", `{"path":"main_test.go"}`, nil, 3),
		entry(id, 3, "exec", `{"command":"go test ./... 2>&1 | tail -n 50","timeout":600}`, &exit2, 17034),
	}
	return f
}

func entry(sandbox string, n int, op, detail string, exit *int, ms int64) api.LogEntry {
	return api.LogEntry{
		ID: fmt.Sprintf("e%03d", n), SessionID: sandbox, Source: api.LogSourceAgent, Operation: op,
		Detail: json.RawMessage(detail), ExitCode: exit, StartedAt: epoch.Add(time.Duration(n-10) * time.Minute), DurationMS: ms,
	}
}

func (f *fakeSource) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeSource) check() error {
	if f.down {
		return errDown
	}
	return f.refuse
}

func (f *fakeSource) appendEntry(e api.LogEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries[e.SessionID] = append(f.entries[e.SessionID], e)
	for _, w := range f.watchers {
		w <- e
	}
}

func (f *fakeSource) ListSandboxes(_ context.Context, activeOnly bool) ([]api.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	f.listed = append(f.listed, fmt.Sprintf("active_only=%v", activeOnly))
	var out []api.Sandbox
	for _, sb := range f.sandboxes {
		if !activeOnly || sb.Status == api.StatusActive || sb.Status == api.StatusPaused {
			out = append(out, sb)
		}
	}
	return out, nil
}

// NewestSandboxes answers as GET /v1/sandboxes?limit= does: newest first.
func (f *fakeSource) NewestSandboxes(_ context.Context, limit int) ([]api.Sandbox, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, false, err
	}
	f.listed = append(f.listed, fmt.Sprintf("limit=%d", limit))
	all := slices.Clone(f.sandboxes)
	slices.SortFunc(all, func(a, b api.Sandbox) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if len(all) > limit {
		return all[:limit], true, nil
	}
	return all, false, nil
}

func (f *fakeSource) find(id string) (*api.Sandbox, error) {
	for i := range f.sandboxes {
		if f.sandboxes[i].ID == id {
			sb := f.sandboxes[i]
			return &sb, nil
		}
	}
	return nil, &api.Error{Status: 404, Code: "not_found", Message: "sandbox not found"}
}

func (f *fakeSource) Sandbox(_ context.Context, id string) (*api.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.find(id)
}

func (f *fakeSource) CreateSandbox(_ context.Context, req api.CreateSandboxRequest) (*api.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	f.created = append(f.created, req)
	sb := api.Sandbox{
		ID: fmt.Sprintf("new%05d-0000-4000-8000-000000000000", len(f.created)), Status: api.StatusActive,
		Label: req.Label, Size: req.Size, CreatedAt: epoch, ExpiresAt: epoch.Add(30 * time.Minute),
	}
	f.sandboxes = append(f.sandboxes, sb)
	return &sb, nil
}

func (f *fakeSource) DeleteSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return err
	}
	f.deleted = append(f.deleted, id)
	for i := range f.sandboxes {
		if f.sandboxes[i].ID == id {
			f.sandboxes[i].Status = api.StatusDestroyed
		}
	}
	return nil
}

func (f *fakeSource) PauseSandbox(_ context.Context, id, _ string) (*api.Sandbox, error) {
	return f.setStatus(id, api.StatusActive, api.StatusPaused)
}

func (f *fakeSource) ResumeSandbox(_ context.Context, id string) (*api.ResumeResult, error) {
	sb, err := f.setStatus(id, api.StatusPaused, api.StatusActive)
	if err != nil {
		return nil, err
	}
	return &api.ResumeResult{Sandbox: *sb}, nil
}

// setStatus moves sandbox id from status from to to.
func (f *fakeSource) setStatus(id, from, to string) (*api.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	for i := range f.sandboxes {
		if f.sandboxes[i].ID == id && f.sandboxes[i].Status == from {
			f.sandboxes[i].Status = to
			f.paused = append(f.paused, to)
			sb := f.sandboxes[i]
			return &sb, nil
		}
	}
	return nil, &api.Error{Code: api.CodeConflict, Message: "sandbox " + id + " is not " + from}
}

func (f *fakeSource) SandboxStats(context.Context, string) (*api.SandboxStats, error) {
	return &api.SandboxStats{MemoryBytes: 48 << 20, MemoryAnonBytes: 12 << 20, Pids: 7, DiskUsedBytes: 310 << 20, DiskQuotaBytes: 5 << 30}, nil
}

func (f *fakeSource) Host(context.Context) (*api.HostStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	h := f.host
	return &h, nil
}

func (f *fakeSource) SyncStatus(_ context.Context, id string) (*api.SyncStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	st, ok := f.sync[id]
	if !ok {
		return nil, &api.Error{Status: 503, Code: api.CodeStorageUnavailable, Message: "object storage is not configured"}
	}
	return st, nil
}

func (f *fakeSource) Processes(context.Context, string) (*api.ProcessList, error) {
	exit := 0
	return &api.ProcessList{Processes: []api.ProcessInfo{
		{ProcessID: "p1a2b3c4d5", Command: "python3 -m http.server 8000", Status: "running", StartedAt: epoch},
		{ProcessID: "p9f8e7d6c5", Command: "make docs", Status: "exited", StartedAt: epoch, ExitCode: &exit},
	}}, nil
}

func (f *fakeSource) Log(_ context.Context, id string, limit, offset int) (*api.LogPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	all := f.entries[id]
	end := min(offset+limit, len(all))
	return &api.LogPage{Entries: append([]api.LogEntry(nil), all[min(offset, end):end]...), Limit: limit, Offset: offset, Total: len(all)}, nil
}

func (f *fakeSource) WatchLog(ctx context.Context, id, lastEventID string, fn func(api.LogEntry) error) error {
	f.mu.Lock()
	if err := f.check(); err != nil {
		f.mu.Unlock()
		return err
	}
	backlog := append([]api.LogEntry(nil), f.entries[id]...)
	w := make(chan api.LogEntry, 16)
	f.watchers = append(f.watchers, w)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.watchers = slices.DeleteFunc(f.watchers, func(c chan api.LogEntry) bool { return c == w })
	}()
	skip := lastEventID != ""
	for _, e := range backlog {
		if !skip {
			if err := fn(e); err != nil {
				return err
			}
		}
		if e.ID == lastEventID {
			skip = false
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-w:
			if e.SessionID == id {
				if err := fn(e); err != nil {
					return err
				}
			}
		}
	}
}

func (f *fakeSource) Exec(_ context.Context, id string, req api.ExecRequest) (*api.ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	f.execs = append(f.execs, req.Command)
	return &api.ExecResult{ExitCode: 1, Stdout: "line one\nline two\n", Stderr: "warning: something\n", DurationMS: 42}, nil
}

func (f *fakeSource) Attach(id string) tea.ExecCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attached = append(f.attached, id)
	return fakeExec{}
}

// fakeExec is an attachment that detaches at once.
type fakeExec struct{}

func (fakeExec) Run() error          { return nil }
func (fakeExec) SetStdin(io.Reader)  {}
func (fakeExec) SetStdout(io.Writer) {}
func (fakeExec) SetStderr(io.Writer) {}
