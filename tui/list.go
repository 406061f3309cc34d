package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/boxkite/boxkite/client/api"
)

// sortKey orders the sandbox list; s cycles through them.
type sortKey int

const (
	sortStatus  sortKey = iota // active first, then newest
	sortCreated                // newest first
	sortLabel
	sortExpiry // soonest first
	numSortKeys
)

func (k sortKey) String() string {
	return [...]string{"status", "created", "label", "expiry"}[k]
}

type listState struct {
	all      []api.Sandbox
	more     bool // older ended sandboxes are not in all (readSandboxes)
	loaded   bool
	rows     []api.Sandbox // all, filtered and sorted
	cursor   int
	top      int
	selected string // id under the cursor, kept across refreshes
	sortBy   sortKey

	filter    textinput.Model
	filtering bool
}

func newTextInput(prompt string) textinput.Model {
	ti := textinput.New()
	ti.Prompt = prompt
	// A steady cursor: no blink ticks, and stable golden views.
	ti.Cursor.SetMode(cursor.CursorStatic)
	return ti
}

func newListState() listState {
	return listState{filter: newTextInput("/")}
}

// keepSelected returns sbs with the selected sandbox added back when it
// is not there because newer ones pushed it off the page (more): only an
// ended sandbox can fall off (the live ones are all read), and an ended
// sandbox does not change, so the copy the list has is still right.
func (l *listState) keepSelected(sbs []api.Sandbox, more bool) []api.Sandbox {
	if !more || l.selected == "" || slices.ContainsFunc(sbs, func(sb api.Sandbox) bool { return sb.ID == l.selected }) {
		return sbs
	}
	i := slices.IndexFunc(l.all, func(sb api.Sandbox) bool { return sb.ID == l.selected })
	if i < 0 || statusRank(l.all[i].Status) < 2 {
		return sbs
	}
	return append(sbs, l.all[i])
}

func (l *listState) set(sbs []api.Sandbox) {
	l.all, l.loaded = sbs, true
	l.rebuild()
}

// rebuild filters and sorts all into rows and puts the cursor back on the
// selected sandbox.
func (l *listState) rebuild() {
	q := strings.ToLower(strings.TrimSpace(l.filter.Value()))
	l.rows = l.rows[:0]
	for _, sb := range l.all {
		if q == "" || strings.Contains(strings.ToLower(sb.ID+" "+sb.Label+" "+sb.Status+" "+sb.Size), q) {
			l.rows = append(l.rows, sb)
		}
	}
	slices.SortStableFunc(l.rows, func(a, b api.Sandbox) int {
		newest := b.CreatedAt.Compare(a.CreatedAt)
		switch l.sortBy {
		case sortStatus:
			return cmp.Or(cmp.Compare(statusRank(a.Status), statusRank(b.Status)), newest, cmp.Compare(a.ID, b.ID))
		case sortLabel:
			return cmp.Or(cmp.Compare(a.Label, b.Label), newest, cmp.Compare(a.ID, b.ID))
		case sortExpiry:
			return cmp.Or(cmp.Compare(statusRank(a.Status), statusRank(b.Status)), a.ExpiresAt.Compare(b.ExpiresAt), cmp.Compare(a.ID, b.ID))
		}
		return cmp.Or(newest, cmp.Compare(a.ID, b.ID))
	})
	l.cursor = 0
	for i, sb := range l.rows {
		if sb.ID == l.selected {
			l.cursor = i
		}
	}
	l.syncSelected()
}

func statusRank(s string) int {
	switch s {
	case api.StatusActive:
		return 0
	case api.StatusPaused:
		return 1
	}
	return 2
}

func (l *listState) syncSelected() {
	l.cursor = min(max(l.cursor, 0), max(len(l.rows)-1, 0))
	l.selected = ""
	if len(l.rows) > 0 {
		l.selected = l.rows[l.cursor].ID
	}
}

func (l *listState) move(d int) {
	l.cursor += d
	l.syncSelected()
}

// usable passes id on, or, when the sandbox under the cursor cannot be
// used (it is paused or ended), says why in the status line: a key that
// does nothing without a word looks broken.
func (m *Model) usable(id string) string {
	if l := &m.list; id == "" && len(l.rows) > 0 {
		m.notUsable(l.rows[l.cursor])
	}
	return id
}

// notUsable says why sb takes no exec, attach or destroy.
func (m *Model) notUsable(sb api.Sandbox) {
	if sb.Status == api.StatusPaused {
		m.setNote("sandbox "+shortID(sb.ID)+" is paused: p resumes it", true)
		return
	}
	m.setNote("sandbox "+shortID(sb.ID)+" is "+oneLine(sb.Status), true)
}

// selectedActive is the id under the cursor when that sandbox can still
// be used, else "".
func (l *listState) selectedActive() string {
	if len(l.rows) == 0 || l.rows[l.cursor].Status != api.StatusActive {
		return ""
	}
	return l.selected
}

func (l *listState) updateInput(msg tea.Msg) tea.Cmd {
	if !l.filtering {
		return nil
	}
	var cmd tea.Cmd
	l.filter, cmd = l.filter.Update(msg)
	l.rebuild()
	return cmd
}

func (m *Model) listKey(msg tea.KeyMsg) tea.Cmd {
	l, k := &m.list, m.keys
	if l.filtering {
		switch msg.Type {
		case tea.KeyEnter:
			l.filtering = false
			l.filter.Blur()
			return nil
		case tea.KeyEsc:
			l.filtering = false
			l.filter.Blur()
			l.filter.SetValue("")
			l.rebuild()
			return nil
		}
		return l.updateInput(msg)
	}
	if k.navigate(msg, max(m.bodyHeight()-2, 1), len(l.rows), l.move) {
		return nil
	}
	switch {
	case key.Matches(msg, k.Filter):
		l.filtering = true
		return l.filter.Focus()
	case key.Matches(msg, k.Back):
		if l.filter.Value() != "" {
			l.filter.SetValue("")
			l.rebuild()
		}
	case key.Matches(msg, k.Sort):
		l.sortBy = (l.sortBy + 1) % numSortKeys
		l.rebuild()
	case key.Matches(msg, k.Refresh):
		return m.loadSandboxes()
	case key.Matches(msg, k.Create):
		return m.openCreate()
	case key.Matches(msg, k.Open):
		if l.selected != "" {
			return m.openDetail(l.selected)
		}
	case key.Matches(msg, k.Log):
		if l.selected != "" {
			return m.openLog(l.selected)
		}
	case key.Matches(msg, k.Exec):
		return m.openExec(m.usable(l.selectedActive()))
	case key.Matches(msg, k.Attach):
		return m.attach(m.usable(l.selectedActive()))
	case key.Matches(msg, k.Destroy):
		m.askDestroy(m.usable(l.selectedActive()))
	case key.Matches(msg, k.Pause):
		if len(l.rows) > 0 {
			return m.togglePause(l.rows[l.cursor])
		}
	}
	return nil
}

// listColumns are the widths of ID, STATUS, SIZE, AGE and EXPIRES; LABEL
// takes what is left.
var listColumns = [...]int{8, 10, 7, 6, 9}

func (m *Model) listView() string {
	l := &m.list
	var b strings.Builder
	info := "sort: " + l.sortBy.String()
	switch {
	case l.filtering:
		info = l.filter.View()
	case l.filter.Value() != "":
		info = fmt.Sprintf("filter: %s  %s", l.filter.Value(), info)
	}
	// At a tiny terminal a row comes first: below three lines of body the
	// column header goes (the info line too, unless it is the filter
	// input), so at least one row shows.
	tiny := m.bodyHeight() < 3
	showInfo := !tiny || l.filtering
	if showInfo {
		b.WriteString(m.st.dim.Render(info) + "\n")
	}
	fixed := 2 + 6 // marker and the gaps between columns
	for _, w := range listColumns {
		fixed += w
	}
	labelW := max(m.width-fixed, 5)
	header := "  " + fit("ID", listColumns[0]) + " " + fit("STATUS", listColumns[1]) + " " + fit("LABEL", labelW) + " " +
		fit("SIZE", listColumns[2]) + " " + fit("AGE", listColumns[3]) + " " + fit("EXPIRES", listColumns[4])
	if !tiny || (!showInfo && m.bodyHeight() == 2) {
		b.WriteString(m.st.header.Render(strings.TrimRight(header, " ")) + "\n")
	}
	switch {
	case !l.loaded && m.offline != nil:
		b.WriteString("  cannot reach the server yet\n")
		return b.String()
	case !l.loaded:
		b.WriteString("  loading…\n")
		return b.String()
	case len(l.rows) == 0 && len(l.all) > 0:
		b.WriteString("  no sandbox matches the filter\n")
		return b.String()
	case len(l.rows) == 0:
		b.WriteString("  no sandboxes yet; press c to create one\n")
		return b.String()
	}
	h := max(m.bodyHeight()-2, 1)
	if tiny {
		h = 1
	}
	l.top = scrollTop(l.top, l.cursor, h, len(l.rows))
	now := m.now()
	for i := l.top; i < min(l.top+h, len(l.rows)); i++ {
		sb := l.rows[i]
		status := fit(oneLine(sb.Status), listColumns[1])
		switch sb.Status {
		case api.StatusActive:
			status = m.st.ok.Render(status)
		case api.StatusPaused:
			status = m.st.warn.Render(status)
		default:
			status = m.st.dim.Render(status)
		}
		row := fit(oneLine(shortID(sb.ID)), listColumns[0]) + " " + status + " " + fit(oneLine(orDash(sb.Label)), labelW) + " " +
			fit(oneLine(sb.Size), listColumns[2]) + " " + fit(Age(sb.CreatedAt, now), listColumns[3]) + " " + fit(Expiry(sb, now), listColumns[4])
		if i == l.cursor {
			b.WriteString("› " + m.st.selected.Render(row) + "\n")
		} else {
			b.WriteString("  " + row + "\n")
		}
	}
	return b.String()
}

// scrollTop returns the first row to show of n so that cursor is among
// the h shown, moving the window as little as possible.
func scrollTop(top, cursor, h, n int) int {
	if cursor < top {
		top = cursor
	}
	if cursor >= top+h {
		top = cursor - h + 1
	}
	return min(max(top, 0), max(n-h, 0))
}
