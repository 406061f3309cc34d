package tui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/boxkite/boxkite/client/api"
)

const (
	// maxLogEntries bounds what the viewer keeps; the oldest go first.
	maxLogEntries = 5000
	// watchBatch is how many queued entries one message carries at most.
	watchBatch = 256
	// watchRetry is the pause before a lost stream is opened again.
	watchRetry = 2 * time.Second
)

type logState struct {
	id       string
	gen      int // tells this stream's messages from those of earlier ones
	cancel   context.CancelFunc
	entries  []api.LogEntry
	seen     map[string]bool
	expanded map[string]bool
	cursor   int
	top      int // first line shown
	follow   bool
	lost     error // why the stream ended; it is being reopened

	search    textinput.Model
	searching bool
	query     string
}

type (
	logBatchMsg struct {
		gen     int
		entries []api.LogEntry
		end     *watchEndMsg // the stream ended after these entries
		more    <-chan tea.Msg
	}
	watchEndMsg struct {
		gen int
		err error
	}
	watchRetryMsg struct{ gen int }
)

// stop ends the stream, if any.
func (l *logState) stop() {
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	}
}

func (m *Model) openLog(id string) tea.Cmd {
	m.log.stop()
	gen := m.log.gen + 1
	search := m.log.search
	if search.Prompt == "" {
		search = newTextInput("search: ")
		search.Width = max(m.width-12, 10)
	}
	search.SetValue("")
	m.log = logState{id: id, gen: gen, seen: map[string]bool{}, expanded: map[string]bool{}, follow: true, search: search}
	m.push(screenLog)
	return m.startWatch("")
}

// startWatch follows the log from after lastID: one Cmd runs the stream
// and feeds a channel, another reads it; each batch read asks for the next.
func (m *Model) startWatch(lastID string) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	m.log.cancel = cancel
	src, id, gen := m.src, m.log.id, m.log.gen
	ch := make(chan tea.Msg, watchBatch)
	run := func() tea.Msg {
		defer close(ch)
		err := src.WatchLog(ctx, id, lastID, func(e api.LogEntry) error {
			select {
			case ch <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if ctx.Err() == nil {
			if err == nil {
				err = fmt.Errorf("the log stream ended")
			}
			ch <- watchEndMsg{gen: gen, err: err}
		}
		return nil
	}
	return tea.Batch(run, readWatch(ch, gen))
}

// readWatch waits for the next entry (or the end) of a stream and takes
// whatever else is already queued with it.
func readWatch(ch <-chan tea.Msg, gen int) tea.Cmd {
	return func() tea.Msg {
		batch := logBatchMsg{gen: gen, more: ch}
		for len(batch.entries) < watchBatch {
			var (
				msg tea.Msg
				ok  bool
			)
			if len(batch.entries) == 0 {
				msg, ok = <-ch
			} else {
				select {
				case msg, ok = <-ch:
				default:
					return batch
				}
			}
			switch msg := msg.(type) {
			case api.LogEntry:
				batch.entries = append(batch.entries, msg)
			case watchEndMsg:
				batch.end = &msg
				return batch
			}
			if !ok {
				if len(batch.entries) == 0 {
					return nil // cancelled: nobody is waiting for this stream
				}
				return batch
			}
		}
		return batch
	}
}

func (m *Model) updateLogStream(msg tea.Msg) tea.Cmd {
	l := &m.log
	switch msg := msg.(type) {
	case logBatchMsg:
		if msg.gen != l.gen || !m.inStack(screenLog) {
			return nil // a stream the user has moved away from
		}
		l.lost = nil
		l.add(msg.entries)
		if msg.end != nil {
			return m.streamLost(*msg.end)
		}
		return readWatch(msg.more, msg.gen)
	case watchEndMsg:
		if msg.gen != l.gen || !m.inStack(screenLog) {
			return nil
		}
		return m.streamLost(msg)
	case watchRetryMsg:
		if msg.gen != l.gen || !m.inStack(screenLog) {
			return nil
		}
		last := ""
		if n := len(l.entries); n > 0 {
			last = l.entries[n-1].ID
		}
		return m.startWatch(last)
	}
	return nil
}

// streamLost notes why the stream ended and reopens it after a pause,
// from the last entry seen: when the server comes back, so does the log.
func (m *Model) streamLost(end watchEndMsg) tea.Cmd {
	m.log.lost = end.err
	m.log.stop()
	gen := end.gen
	return tea.Tick(watchRetry, func(time.Time) tea.Msg { return watchRetryMsg{gen: gen} })
}

func (l *logState) add(entries []api.LogEntry) {
	for _, e := range entries {
		if l.seen[e.ID] {
			continue
		}
		l.seen[e.ID] = true
		l.entries = append(l.entries, e)
	}
	if drop := len(l.entries) - maxLogEntries; drop > 0 {
		for _, e := range l.entries[:drop] {
			delete(l.seen, e.ID)
			delete(l.expanded, e.ID)
		}
		l.entries = append([]api.LogEntry(nil), l.entries[drop:]...)
		l.cursor = max(l.cursor-drop, 0)
	}
	if l.follow {
		l.cursor = max(len(l.entries)-1, 0)
	}
}

func (l *logState) matches(e api.LogEntry) bool {
	if l.query == "" {
		return false
	}
	q := strings.ToLower(l.query)
	return strings.Contains(strings.ToLower(e.Operation+" "+e.Source+" "+string(e.Detail)), q)
}

// jump moves the cursor to the next (dir 1) or previous (dir -1) match.
func (l *logState) jump(dir int) bool {
	n := len(l.entries)
	for i := 1; i <= n; i++ {
		j := ((l.cursor+dir*i)%n + n) % n
		if l.matches(l.entries[j]) {
			l.cursor = j
			l.follow = false
			return true
		}
	}
	return false
}

func (l *logState) move(d int) {
	l.cursor = min(max(l.cursor+d, 0), max(len(l.entries)-1, 0))
	// Following means staying on the newest entry; moving off it stops.
	l.follow = l.cursor == len(l.entries)-1 && d > 0
}

func (l *logState) updateInput(msg tea.Msg) tea.Cmd {
	if !l.searching {
		return nil
	}
	var cmd tea.Cmd
	l.search, cmd = l.search.Update(msg)
	return cmd
}

func (m *Model) logKey(msg tea.KeyMsg) tea.Cmd {
	l, k := &m.log, m.keys
	if l.searching {
		switch msg.Type {
		case tea.KeyEnter:
			l.searching = false
			l.search.Blur()
			l.query = strings.TrimSpace(l.search.Value())
			if l.query != "" && !l.matches(l.entries[min(l.cursor, max(len(l.entries)-1, 0))]) && !l.jump(1) {
				m.setNote("no entry matches "+l.query, false)
			}
			return nil
		case tea.KeyEsc:
			l.searching = false
			l.search.Blur()
			return nil
		}
		return l.updateInput(msg)
	}
	if !key.Matches(msg, k.Back) && k.navigate(msg, max(m.bodyHeight()-3, 1), len(l.entries), l.move) {
		return nil
	}
	switch {
	case key.Matches(msg, k.Back):
		if l.query != "" {
			l.query = ""
			return nil
		}
		return m.back()
	case key.Matches(msg, k.Follow):
		l.follow = !l.follow
		if l.follow {
			l.cursor = max(len(l.entries)-1, 0)
		}
	case key.Matches(msg, k.Expand):
		if len(l.entries) > 0 {
			id := l.entries[l.cursor].ID
			l.expanded[id] = !l.expanded[id]
		}
	case key.Matches(msg, k.Search):
		l.searching = true
		l.search.SetValue(l.query)
		return l.search.Focus()
	case key.Matches(msg, k.Next):
		l.jump(1)
	case key.Matches(msg, k.Prev):
		l.jump(-1)
	case key.Matches(msg, k.Exec):
		return m.openExec(l.id)
	case key.Matches(msg, k.Attach):
		return m.attach(l.id)
	}
	return nil
}

// Widths of the log table's TIME, SOURCE, OPERATION, EXIT and DURATION.
var logColumns = [...]int{8, 6, 14, 4, 7}

// entryLine is the one-line form of an entry, width cells wide.
func (m *Model) entryLine(e api.LogEntry, width int) string {
	source := oneLine(e.Source)
	if source == api.LogSourceHumanTakeover {
		source = "human"
	}
	dur := (time.Duration(e.DurationMS) * time.Millisecond).String()
	line := fit(e.StartedAt.In(m.loc).Format("15:04:05"), logColumns[0]) + " " + fit(source, logColumns[1]) + " " +
		fit(oneLine(e.Operation), logColumns[2]) + " " + fit(exitText(e), logColumns[3]) + " " + fit(dur, logColumns[4]) + " " + entrySummary(e)
	return fit(line, width)
}

// entryDetailLines are what an expanded entry shows under its line.
func (m *Model) entryDetailLines(e api.LogEntry, width int) []string {
	const indent = "    "
	w := max(width-len(indent), 10)
	var out []string
	d := entryDetail(e)
	if c, ok := d["command"].(string); ok {
		out = append(out, "command:")
		for _, l := range wrap(c, w-2) {
			out = append(out, "  "+l)
		}
	}
	state := "exit code: " + exitText(e)
	if e.ExitCode != nil && *e.ExitCode == api.ExitCodeTimeout {
		state += " (timed out)"
	}
	state += "   duration: " + (time.Duration(e.DurationMS) * time.Millisecond).String()
	if e.OutputTruncated {
		state += "   output truncated"
	}
	out = append(out, state)
	out = append(out, "source: "+e.Source+"   at "+e.StartedAt.In(m.loc).Format("2006-01-02 15:04:05.000"))
	for _, k := range sortedKeys(d) {
		if k == "command" {
			continue
		}
		out = append(out, wrap(fmt.Sprintf("%s: %v", k, d[k]), w)...)
	}
	for i, l := range out {
		out[i] = fit(indent+oneLine(l), width)
	}
	return out
}

// logGone says why the log's sandbox will write no more entries (it was
// destroyed or lost, by the last list read, or the server no longer
// knows it), or "" while it may: a stream that stays open on an ended
// sandbox must not look like one still waiting.
func (m *Model) logGone() string {
	id := m.log.id
	if e, ok := errors.AsType[*api.Error](m.log.lost); ok && (e.Status == http.StatusNotFound || e.Code == api.CodeNotFound) {
		return "sandbox " + shortID(id) + " is gone"
	}
	for _, sb := range m.list.all {
		if sb.ID != id || sb.Status == api.StatusActive || sb.Status == api.StatusPaused {
			continue
		}
		gone := "sandbox " + shortID(id) + " is " + oneLine(sb.Status)
		if sb.DestroyReason != "" && sb.DestroyReason != sb.Status {
			gone += " (" + oneLine(sb.DestroyReason) + ")"
		}
		return gone
	}
	return ""
}

// count is n with the word for one or for many: "1 entry", "2 entries".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// logInfoLine is the log screen's first line: following or paused, how
// many entries and matches, a lost stream; or the search input.
func (m *Model) logInfoLine() string {
	l := &m.log
	var info []string
	if l.follow {
		info = append(info, "following")
	} else {
		info = append(info, "paused (f follows)")
	}
	info = append(info, count(len(l.entries), "entry", "entries"))
	if l.query != "" {
		n := 0
		for _, e := range l.entries {
			if l.matches(e) {
				n++
			}
		}
		info = append(info, fmt.Sprintf("%q: %s", l.query, count(n, "match", "matches")))
	}
	infoLine := m.st.dim.Render(strings.Join(info, " · "))
	if gone := m.logGone(); gone != "" {
		infoLine += "  " + m.st.warn.Render(gone+": no new entries")
	} else if l.lost != nil {
		infoLine += "  " + m.st.warn.Render("stream lost, reconnecting: "+oneLine(errText(l.lost)))
	}
	if l.searching {
		infoLine = l.search.View()
	}
	return infoLine
}

func (m *Model) logView() string {
	l := &m.log
	var b strings.Builder
	// At a tiny terminal an entry comes first: below three lines of body
	// the column header goes, and at one line the info line too (unless
	// it is the search input), so at least one entry shows.
	bh := m.bodyHeight()
	showInfo, showHeader := bh >= 2 || l.searching, bh >= 3
	if showInfo {
		b.WriteString(m.logInfoLine() + "\n")
	}
	if showHeader {
		header := "  " + fit("TIME", logColumns[0]) + " " + fit("SOURCE", logColumns[1]) + " " + fit("OPERATION", logColumns[2]) + " " +
			fit("EXIT", logColumns[3]) + " " + fit("TOOK", logColumns[4]) + " DETAIL"
		b.WriteString(m.st.header.Render(header) + "\n")
	}
	if len(l.entries) == 0 {
		if gone := m.logGone(); gone != "" {
			b.WriteString("  no entries: " + gone + "\n")
		} else {
			b.WriteString("  waiting for entries…\n")
		}
		return b.String()
	}
	// Only the entries in the window are drawn: the log may hold
	// thousands, and a frame must stay cheap. An entry is one line, plus
	// its details when expanded (those are few).
	details := map[int][]string{}
	total, first, last := 0, 0, 0
	for i, e := range l.entries {
		if i == l.cursor {
			first = total
		}
		total++
		if l.expanded[e.ID] {
			details[i] = m.entryDetailLines(e, m.width)
			total += len(details[i])
		}
		if i == l.cursor {
			last = total - 1
		}
	}
	h := bh
	for _, shown := range []bool{showInfo, showHeader} {
		if shown {
			h--
		}
	}
	h = max(h, 1)
	if l.follow {
		l.top = total - h
	}
	l.top = scrollTop(l.top, last, h, total)
	l.top = scrollTop(l.top, first, h, total)
	var lines []string
	at := 0 // line number of the next line
	for i := 0; i < len(l.entries) && at < l.top+h; i++ {
		e := l.entries[i]
		if at+1+len(details[i]) <= l.top {
			at += 1 + len(details[i])
			continue
		}
		marker, line := "  ", m.entryLine(e, m.width-2)
		switch {
		case i == l.cursor:
			marker, line = "› ", m.st.selected.Render(line)
		case l.matches(e):
			line = m.st.match.Render(line)
		}
		for _, x := range append([]string{marker + line}, details[i]...) {
			if at >= l.top && at < l.top+h {
				lines = append(lines, x)
			}
			at++
		}
	}
	for _, line := range lines {
		b.WriteString(line + "\n")
	}
	return b.String()
}
