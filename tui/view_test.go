package tui

import (
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/boxkite/boxkite/client/api"
)

// TestViewGolden draws each screen at fixed sizes; run with -update to
// rewrite testdata/TestViewGolden/*.golden after a deliberate change.
func TestViewGolden(t *testing.T) {
	tests := []struct {
		name  string
		w, h  int
		setup func(t *testing.T, src *fakeSource, m *Model)
	}{
		{"list_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) { load(m) }},
		{"list_120x40", 120, 40, func(t *testing.T, src *fakeSource, m *Model) { load(m) }},
		{"list_filtered_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			load(m)
			keys(m, "/", "s", "c")
		}},
		{"list_offline_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			src.setDown(true)
			load(m)
		}},
		{"list_narrow_50x12", 50, 12, func(t *testing.T, src *fakeSource, m *Model) { load(m) }},
		{"list_tiny_20x5", 20, 5, func(t *testing.T, src *fakeSource, m *Model) { load(m) }},
		{"list_context_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			m.context = "staging" // Options.Context: the title names the CLI's context
			load(m)
		}},
		{"list_audit_down_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			since := epoch
			src.host.Audit = api.HostAudit{Reason: "the database is read-only", Since: &since}
			load(m)
		}},
		{"list_disk_full_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			src.host.Disk = &api.HostDisk{TotalBytes: 250 << 30, FreeBytes: 700 << 20, WatermarkBytes: 1 << 30, FreezeBelowBytes: 512 << 20, Refusing: true}
			load(m)
		}},
		{"detail_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			load(m)
			keys(m, "j")
			m.Update(keys(m, "enter")())
		}},
		{"detail_sync_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			flushed, failed, next := epoch.Add(-2*time.Minute), epoch.Add(-5*time.Second), epoch.Add(11*time.Second)
			src.sync = map[string]*api.SyncStatus{"0b8c2f6e-1111-4a5b-9c0d-000000000001": {
				Backend: "s3", State: "syncing", Pending: 3, SyncedFiles: 1004, SyncedBytes: 50 << 20, LastFlushAt: &flushed,
				LastError: `put boxkite/a/b/x.txt: dial tcp 127.0.0.1:9000: connect: connection refused`, LastErrorAt: &failed,
				Attempts: 4, NextAttemptAt: &next, FlushInterval: 30,
			}}
			load(m)
			keys(m, "j")
			m.Update(keys(m, "enter")())
		}},
		{"detail_frozen_pool_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			// Frozen because the clone pool ran out, not the host's disk:
			// the detail says which (before, always the host's).
			src.sandboxes[0].FrozenReason = api.FrozenClonePool
			load(m)
			keys(m, "j")
			m.Update(keys(m, "enter")())
		}},
		{"log_expanded_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			openTestLog(t, src, m)
			keys(m, "enter")
		}},
		{"log_tiny_20x5", 20, 5, func(t *testing.T, src *fakeSource, m *Model) { openTestLog(t, src, m) }},
		{"log_search_120x40", 120, 40, func(t *testing.T, src *fakeSource, m *Model) {
			openTestLog(t, src, m)
			keys(m, "/")
			typeText(m, "main")
			keys(m, "enter")
		}},
		{"exec_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			load(m)
			keys(m, "e")
			typeText(m, "make test")
			m.Update(keys(m, "enter")())
		}},
		{"create_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			load(m)
			keys(m, "c", "right", "tab", "tab")
			typeText(m, "demo")
		}},
		{"help_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			load(m)
			keys(m, "?")
		}},
		{"confirm_80x24", 80, 24, func(t *testing.T, src *fakeSource, m *Model) {
			load(m)
			keys(m, "d")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFakeSource()
			m := newTestModel(t, src, tt.w, tt.h)
			tt.setup(t, src, m)
			defer m.log.stop()
			got := m.View()
			lines := strings.Split(got, "\n")
			if len(lines) != tt.h {
				t.Errorf("view has %d lines, want %d", len(lines), tt.h)
			}
			for i, l := range lines {
				if w := len([]rune(l)); w > tt.w {
					t.Errorf("line %d is %d cells wide, more than %d: %q", i+1, w, tt.w, l)
				}
			}
			// testdata/TestViewGolden/<name>.golden; -update rewrites it.
			golden.RequireEqual(t, []byte(got))
		})
	}
}

// TestResize redraws every screen after the window shrinks and grows: the
// view always fills the window exactly and never overflows it.
func TestResize(t *testing.T) {
	opens := map[string][]string{"list": nil, "detail": {"enter"}, "log": {"l"}, "exec": {"e"}, "create": {"c"}, "help": {"?"}}
	sizes := [][2]int{{80, 24}, {40, 10}, {132, 50}, {20, 5}}
	for name, ks := range opens {
		t.Run(name, func(t *testing.T) {
			src := newFakeSource()
			m := newTestModel(t, src, 80, 24)
			load(m)
			keys(m, ks...)
			defer m.log.stop()
			for _, e := range src.entries[src.sandboxes[0].ID] {
				m.Update(logBatchMsg{gen: m.log.gen, entries: []api.LogEntry{e}})
			}
			for _, sz := range sizes {
				m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				lines := strings.Split(m.View(), "\n")
				if len(lines) != sz[1] {
					t.Errorf("%dx%d: %d lines", sz[0], sz[1], len(lines))
				}
				for i, l := range lines {
					if w := lipgloss.Width(l); w > sz[0] {
						t.Errorf("%dx%d: line %d is %d wide: %q", sz[0], sz[1], i+1, w, l)
					}
				}
			}
		})
	}
}

// TestListTinyTerminal: at a terminal of a few lines the list shows the
// selected row, where it showed the info line and the header and no row.
func TestListTinyTerminal(t *testing.T) {
	for _, sz := range [][2]int{{20, 5}, {40, 4}, {80, 5}} {
		m := newTestModel(t, newFakeSource(), sz[0], sz[1])
		load(m)
		keys(m, "j")
		if v := m.View(); !strings.Contains(v, "› "+shortID(m.list.selected)) {
			t.Errorf("%dx%d: the selected row is not shown:\n%s", sz[0], sz[1], v)
		}
		keys(m, "/")
		if v := m.View(); !strings.Contains(v, "/") {
			t.Errorf("%dx%d: the filter input is not shown:\n%s", sz[0], sz[1], v)
		}
	}
}

// TestLogTinyTerminal: at a terminal of a few lines the log shows the
// selected entry, where it showed the info line and the header and no
// entry; the search input shows while it is typed in.
func TestLogTinyTerminal(t *testing.T) {
	for _, sz := range [][2]int{{20, 5}, {40, 4}, {80, 5}} {
		src := newFakeSource()
		m := newTestModel(t, src, sz[0], sz[1])
		openTestLog(t, src, m)
		keys(m, "k")
		if v := m.View(); !strings.Contains(v, "› "+m.log.entries[m.log.cursor].StartedAt.In(m.loc).Format("15:04:05")) {
			t.Errorf("%dx%d: the selected entry is not shown:\n%s", sz[0], sz[1], v)
		}
		keys(m, "enter") // expanded, its line still shows
		if v := m.View(); !strings.Contains(v, "› ") {
			t.Errorf("%dx%d: the expanded entry is not shown:\n%s", sz[0], sz[1], v)
		}
		keys(m, "/")
		if v := m.View(); !strings.Contains(v, "search:") {
			t.Errorf("%dx%d: the search input is not shown:\n%s", sz[0], sz[1], v)
		}
	}
}

// TestCreateTinyTerminal: at a terminal too short for the create form
// the field being typed in shows (a failure above it), where 20x5 showed
// only the form's title.
func TestCreateTinyTerminal(t *testing.T) {
	for _, sz := range [][2]int{{20, 5}, {40, 4}, {80, 8}} {
		m := newTestModel(t, newFakeSource(), sz[0], sz[1])
		load(m)
		keys(m, "c")
		if v := m.View(); !strings.Contains(v, "› size") {
			t.Errorf("%dx%d: the size field is not shown:\n%s", sz[0], sz[1], v)
		}
		keys(m, "tab", "tab")
		if v := m.View(); !strings.Contains(v, "› label") {
			t.Errorf("%dx%d: the label field is not shown after two tabs:\n%s", sz[0], sz[1], v)
		}
		m.create.err = "label taken" // first; the field too when there is a line for it
		if v := m.View(); !strings.Contains(v, "error: label") || (m.bodyHeight() > 1 && !strings.Contains(v, "› label")) {
			t.Errorf("%dx%d: the error and the field are not shown:\n%s", sz[0], sz[1], v)
		}
	}
}

// TestHelpTinyTerminal: at a terminal of a few lines the help shows keys,
// one a line, where 20x5 showed only its title; a tall one keeps the
// columns under their title.
func TestHelpTinyTerminal(t *testing.T) {
	for _, sz := range [][2]int{{20, 5}, {40, 4}, {80, 6}} {
		m := newTestModel(t, newFakeSource(), sz[0], sz[1])
		load(m)
		keys(m, "?")
		if v := m.View(); !strings.Contains(v, m.keys.Up.Help().Key+" "+m.keys.Up.Help().Desc) {
			t.Errorf("%dx%d: no key is shown:\n%s", sz[0], sz[1], v)
		}
	}
	m := newTestModel(t, newFakeSource(), 80, 24)
	load(m)
	keys(m, "?")
	if v := m.View(); !strings.Contains(v, "Keys") {
		t.Errorf("80x24: the help's title is not shown:\n%s", v)
	}
}

// TestColourAsAsked: Options.Color is the CLI's decision (a terminal,
// no NO_COLOR, no TERM=dumb). The styles follow it, and termenv does not
// veto it on its own rules: with CI set in the environment (as in many
// dev containers) it took every terminal for a pipe, and the TUI lost
// its colours while the CLI's tables kept theirs.
func TestColourAsAsked(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("TERM", "xterm-256color")
	for _, color := range []bool{true, false} {
		st := newStyles(io.Discard, color)
		got := st.err.Render("boom")
		if has := strings.Contains(got, "\x1b["); has != color {
			t.Errorf("Color %v: %q", color, got)
		}
	}
}

// TestTerminalWithoutSize: a pseudo-terminal nobody sized (0×0: some
// programs that spawn one, or `script` run without a terminal) is drawn
// at 80×24 instead of as nothing at all.
func TestTerminalWithoutSize(t *testing.T) {
	m := newTestModel(t, newFakeSource(), 0, 0)
	load(m)
	view := m.View()
	for _, want := range []string{"sandboxes (3)", "7f3a9d21", "q quit"} {
		if !strings.Contains(view, want) {
			t.Errorf("the screen lacks %q:\n%s", want, view)
		}
	}
	if got := strings.Count(view, "\n") + 1; got != 24 {
		t.Errorf("%d lines, want 24", got)
	}
}
