package tui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"

	"github.com/boxkite/boxkite/client/api"
)

// View draws the title line, the current screen, the status line and the
// help bar, exactly m.height lines of at most m.width cells.
func (m *Model) View() string {
	body := m.body()
	lines := strings.Split(body, "\n")
	h := m.bodyHeight()
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	out := make([]string, 0, m.height)
	out = append(out, m.titleLine())
	out = append(out, lines...)
	out = append(out, m.statusLine(), m.helpBar())
	for i, l := range out {
		out[i] = truncateStyled(l, m.width)
	}
	return strings.Join(out, "\n")
}

func truncateStyled(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	return fit(s, w)
}

func (m *Model) body() string {
	if m.showHelp {
		return m.helpView()
	}
	switch m.current() {
	case screenDetail:
		return m.detailView()
	case screenLog:
		return m.logView()
	case screenExec:
		return m.execView()
	case screenCreate:
		return m.createView()
	}
	return m.listView()
}

// helpView is the full help: its columns under a title, or, when the
// terminal is too short for them, one key a line without the title, so a
// terminal of a few lines still shows keys (at 20x5 it showed the title).
func (m *Model) helpView() string {
	_, full := m.keys.forScreen(m.current())
	columns := m.help.FullHelpView(full)
	if h := m.bodyHeight(); strings.Count(columns, "\n")+3 > h {
		var lines []string
		for _, group := range full {
			for _, b := range group {
				if b.Enabled() {
					lines = append(lines, b.Help().Key+" "+b.Help().Desc)
				}
			}
		}
		return strings.Join(lines, "\n")
	}
	return m.st.header.Render("Keys") + "\n\n" + columns
}

func (m *Model) titleLine() string {
	var where string
	switch m.current() {
	case screenList:
		where = fmt.Sprintf("sandboxes (%d)", len(m.list.all))
		if m.list.more {
			// The live ones and the newest ended: older ones are left out.
			where = fmt.Sprintf("sandboxes (%d+)", len(m.list.all))
		}
	case screenDetail:
		where = "sandbox " + m.detail.id
	case screenLog:
		where = "log " + m.log.id
	case screenExec:
		where = "exec in " + m.exec.id
	case screenCreate:
		where = "new sandbox"
	}
	tag := m.context
	if m.org != "" {
		tag = strings.TrimPrefix(tag+" · ", " · ") + "org " + m.org
	}
	left := m.st.title.Render("boxkite") + " " + oneLine(where)
	if tag != "" {
		left = m.st.title.Render("boxkite") + " " + m.st.dim.Render("["+oneLine(tag)+"]") + " " + oneLine(where)
	}
	right := ""
	switch {
	case m.offline != nil:
		right = m.st.warn.Render("reconnecting…")
	case !m.list.loaded:
		right = m.st.dim.Render("connecting…")
	case m.host != nil && m.host.Disk != nil:
		right = m.diskSummary(m.host.Disk)
	}
	gap := m.width - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return left
	}
	return left + strings.Repeat(" ", gap) + right
}

func (m *Model) statusLine() string {
	switch {
	case m.confirm != "":
		return m.st.warn.Render(fmt.Sprintf("destroy sandbox %s? y/n", m.confirm))
	case m.note != "" && m.noteErr:
		return m.st.err.Render("error: " + oneLine(m.note))
	case m.note != "":
		return m.st.ok.Render(oneLine(m.note))
	case m.offline != nil:
		return m.st.warn.Render("server unreachable: " + oneLine(errText(m.offline)) + "; retrying")
	case m.host != nil && !m.host.Audit.Writable:
		return m.st.warn.Render("audit log not writable: " + oneLine(m.host.Audit.Reason) + "; audited calls refused")
	case m.host != nil && m.host.Disk != nil && m.host.Disk.Refusing:
		return m.st.warn.Render("host disk below its watermark: creates and uploads refused")
	}
	return ""
}

// diskSummary is the title bar's "disk 12.3 GiB free, watermark 1.0 GiB",
// a warning once the host is below the watermark.
func (m *Model) diskSummary(d *api.HostDisk) string {
	s := "disk " + humanBytes(d.FreeBytes) + " free, watermark " + humanBytes(d.WatermarkBytes)
	if d.Refusing {
		return m.st.warn.Render(s)
	}
	return m.st.dim.Render(s)
}

// errText is an error as the status line shows it: an API error's message.
func errText(err error) string {
	if e, ok := errors.AsType[*api.Error](err); ok && e.Message != "" {
		return e.Message
	}
	return err.Error()
}

// hinter is an error that says what to do about it.
type hinter interface {
	error
	Hint() string
}

// errHinted is errText followed by what to do, when the error says: an
// API error's hint, or the Hint() of the client's own errors (the CLI
// prints the same as its hint: line).
func errHinted(err error) string {
	text := errText(err)
	var hint string
	if e, ok := errors.AsType[*api.Error](err); ok {
		hint = e.Hint
	} else if h, ok := errors.AsType[hinter](err); ok {
		hint = h.Hint()
	}
	if hint = strings.TrimSpace(hint); hint != "" {
		text += "; hint: " + hint
	}
	return text
}

func (m *Model) helpBar() string {
	if m.confirm != "" {
		return m.help.ShortHelpView([]key.Binding{m.keys.Yes, m.keys.No})
	}
	short, _ := m.keys.forScreen(m.current())
	return m.help.ShortHelpView(short)
}
