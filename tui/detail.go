package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/boxkite/boxkite/client/api"
)

type detailState struct {
	id     string
	sb     *api.Sandbox
	stats  *api.SandboxStats
	procs  []api.ProcessInfo
	recent []api.LogEntry
	total  int
	sync   *api.SyncStatus // nil: no object storage
	err    error           // reading the sandbox itself
	// partErr is why stats or processes are missing: a destroyed sandbox
	// has neither, which is not an error worth shouting about.
	partErr error
}

// detailMsg is one reading of a sandbox for the detail screen.
type detailMsg struct {
	id      string
	sb      *api.Sandbox
	stats   *api.SandboxStats
	procs   []api.ProcessInfo
	recent  []api.LogEntry
	total   int
	sync    *api.SyncStatus
	err     error
	partErr error
}

func (d *detailState) apply(msg detailMsg) {
	if msg.id != d.id {
		return
	}
	d.err = msg.err
	if msg.err != nil {
		return
	}
	d.sb, d.stats, d.procs, d.recent, d.total, d.partErr = msg.sb, msg.stats, msg.procs, msg.recent, msg.total, msg.partErr
	d.sync = msg.sync
}

func (m *Model) openDetail(id string) tea.Cmd {
	if m.detail.id != id {
		m.detail = detailState{id: id}
	}
	m.push(screenDetail)
	return m.loadDetail(id)
}

// loadDetail reads the sandbox, its resources, processes, the newest
// audit entries and its sync to object storage, in one Cmd.
func (m *Model) loadDetail(id string) tea.Cmd {
	m.loadingDetail = true
	src := m.src
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		msg := detailMsg{id: id}
		msg.sb, msg.err = src.Sandbox(ctx, id)
		if msg.err != nil {
			return msg
		}
		if page, err := src.Log(ctx, id, 1, 0); err == nil {
			msg.total = page.Total
			if page, err := src.Log(ctx, id, recentEntries, max(page.Total-recentEntries, 0)); err == nil {
				msg.recent = page.Entries
			}
		}
		if st, err := src.SyncStatus(ctx, id); err == nil {
			msg.sync = st
		}
		if msg.sb.Status != api.StatusActive {
			return msg
		}
		msg.stats, msg.partErr = src.SandboxStats(ctx, id)
		procs, err := src.Processes(ctx, id)
		if err != nil {
			msg.partErr = err
		} else {
			msg.procs = procs.Processes
		}
		return msg
	}
}

func (m *Model) detailKey(msg tea.KeyMsg) tea.Cmd {
	k, id := m.keys, m.detail.id
	active := m.detail.sb != nil && m.detail.sb.Status == api.StatusActive
	switch {
	case key.Matches(msg, k.Back):
		return m.back()
	case key.Matches(msg, k.Log):
		return m.openLog(id)
	case key.Matches(msg, k.Refresh):
		return m.loadDetail(id)
	case key.Matches(msg, k.Pause) && m.detail.sb != nil:
		return m.togglePause(*m.detail.sb)
	case !active:
		if m.detail.sb != nil && (key.Matches(msg, k.Exec) || key.Matches(msg, k.Attach) || key.Matches(msg, k.Destroy)) {
			m.notUsable(*m.detail.sb)
		}
	case key.Matches(msg, k.Exec):
		return m.openExec(id)
	case key.Matches(msg, k.Attach):
		return m.attach(id)
	case key.Matches(msg, k.Destroy):
		m.askDestroy(id)
	}
	return nil
}

func (m *Model) detailView() string {
	d := &m.detail
	var b strings.Builder
	switch {
	case d.sb == nil && d.err != nil:
		return m.st.err.Render("cannot read sandbox: "+oneLine(errHinted(d.err))) + "\n"
	case d.sb == nil:
		return "loading…\n"
	}
	sb, now := d.sb, m.now()
	row := func(k, v string) { fmt.Fprintf(&b, "%-10s %s\n", k, oneLine(v)) }
	row("ID", sb.ID)
	status := sb.Status
	if sb.DestroyReason != "" {
		status += " (" + sb.DestroyReason + ")"
	}
	row("Status", status)
	row("Label", oneLine(orDash(sb.Label)))
	size := sb.Size
	if sb.StorageGB > 0 {
		size += fmt.Sprintf(", %g GB storage", sb.StorageGB)
	}
	row("Size", size)
	row("Created", Age(sb.CreatedAt, now)+" ago")
	row("Expires", Expiry(*sb, now))
	if d.stats != nil {
		row("Memory", fmt.Sprintf("%s (%s anonymous)", humanBytes(d.stats.MemoryBytes), humanBytes(d.stats.MemoryAnonBytes)))
		row("Tasks", fmt.Sprint(d.stats.Pids))
		if d.stats.DiskQuotaBytes > 0 {
			disk := fmt.Sprintf("%s of %s", humanBytes(d.stats.DiskUsedBytes), humanBytes(d.stats.DiskQuotaBytes))
			if m.host != nil && m.host.Disk != nil {
				disk += fmt.Sprintf(" (host: %s free)", humanBytes(m.host.Disk.FreeBytes))
			}
			row("Disk", disk)
		}
	}
	// The sandbox says why it is frozen; its stats, read a moment
	// apart, may have heard of it first.
	if reason := sb.FrozenReason; reason != "" || (d.stats != nil && d.stats.Frozen) {
		if reason == "" {
			reason = d.stats.FrozenReason
		}
		for l := range strings.SplitSeq(ansi.Wrap("frozen: "+FrozenText(reason), max(m.width, 1), ""), "\n") {
			b.WriteString(m.st.warn.Render(l) + "\n")
		}
	}
	if d.partErr != nil {
		b.WriteString(m.st.warn.Render("resources: "+oneLine(errText(d.partErr))) + "\n")
	}
	if d.sync != nil {
		m.syncRows(&b, d.sync, now)
	}
	b.WriteString("\n" + m.st.header.Render(fmt.Sprintf("Processes (%d)", len(d.procs))) + "\n")
	for _, p := range d.procs {
		exit := "running"
		if p.ExitCode != nil {
			exit = fmt.Sprintf("exit %d", *p.ExitCode)
		}
		b.WriteString(fit(fmt.Sprintf("  %-10s %-9s %s", shortID(p.ProcessID), exit, oneLine(p.Command)), m.width) + "\n")
	}
	b.WriteString("\n" + m.st.header.Render(fmt.Sprintf("Recent audit (%d of %d)", len(d.recent), d.total)) + "\n")
	for _, e := range d.recent {
		b.WriteString(fit("  "+m.entryLine(e, m.width-2), m.width) + "\n")
	}
	return b.String()
}

// syncRows shows the sandbox's sync to object storage: its state, the
// writes queued, the last flush and the last error with the retry.
func (m *Model) syncRows(b *strings.Builder, st *api.SyncStatus, now time.Time) {
	last := "never"
	if st.LastFlushAt != nil {
		last = Age(*st.LastFlushAt, now) + " ago"
	}
	fmt.Fprintf(b, "%-10s %s\n", "Sync", oneLine(fmt.Sprintf("%s to %s, %d pending, %d files (%s), last flush %s",
		st.State, st.Backend, st.Pending, st.SyncedFiles, humanBytes(st.SyncedBytes), last)))
	if st.LastError == "" {
		return
	}
	retry := ""
	if st.NextAttemptAt != nil {
		retry = fmt.Sprintf(", attempt %d, next in %s", st.Attempts, ShortDuration(max(st.NextAttemptAt.Sub(now), 0)))
	}
	b.WriteString(fit(m.st.warn.Render(oneLine("sync failing"+retry+": "+st.LastError)), m.width) + "\n")
}
