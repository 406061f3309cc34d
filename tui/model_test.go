package tui

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

func newTestModel(t *testing.T, src *fakeSource, w, h int) *Model {
	t.Helper()
	m := New(Options{Source: src, Now: func() time.Time { return epoch }, Location: time.UTC, Output: os.Stdout})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// load reads the list synchronously, as if any read still in flight had
// been answered.
func load(m *Model) {
	m.loadingList = false
	m.Update(m.loadSandboxes()())
}

func keys(m *Model, ks ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range ks {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "right":
			msg = tea.KeyMsg{Type: tea.KeyRight}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "pgup":
			msg = tea.KeyMsg{Type: tea.KeyPgUp}
		case "ctrl+c":
			msg = tea.KeyMsg{Type: tea.KeyCtrlC}
		case " ":
			msg = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		_, last = m.Update(msg)
	}
	return last
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

func rowIDs(m *Model) []string {
	var ids []string
	for _, sb := range m.list.rows {
		ids = append(ids, shortID(sb.ID))
	}
	return ids
}

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

func TestListSortAndFilter(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want []string
	}{
		{"status first, newest first", nil, []string{"7f3a9d21", "0b8c2f6e", "c41d0e88"}},
		{"created", []string{"s"}, []string{"7f3a9d21", "0b8c2f6e", "c41d0e88"}},
		{"label", []string{"s", "s"}, []string{"c41d0e88", "0b8c2f6e", "7f3a9d21"}},
		{"expiry", []string{"s", "s", "s"}, []string{"7f3a9d21", "0b8c2f6e", "c41d0e88"}},
		{"back to status", []string{"s", "s", "s", "s"}, []string{"7f3a9d21", "0b8c2f6e", "c41d0e88"}},
		{"filter by label", []string{"/", "b", "u", "enter"}, []string{"0b8c2f6e"}},
		{"filter by status", []string{"/", "d", "e", "s", "t", "enter"}, []string{"c41d0e88"}},
		{"filter then esc clears", []string{"/", "b", "u", "esc"}, []string{"7f3a9d21", "0b8c2f6e", "c41d0e88"}},
		{"q is text while filtering", []string{"/", "q", "enter"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestModel(t, newFakeSource(), 80, 24)
			load(m)
			for _, k := range tt.keys {
				if isQuit(keys(m, k)) {
					t.Fatalf("key %q quit", k)
				}
			}
			if diff := cmp.Diff(tt.want, rowIDs(m)); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListKeepsSelectionAcrossRefresh(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	keys(m, "j") // onto 0b8c2f6e
	if got := shortID(m.list.selected); got != "0b8c2f6e" {
		t.Fatalf("selected %s after j, want 0b8c2f6e", got)
	}
	// A newer sandbox appears above it.
	src.sandboxes = append(src.sandboxes, api.Sandbox{ID: "aaaaaaaa-4444", Status: api.StatusActive, Size: "small", CreatedAt: epoch})
	load(m)
	if got := shortID(m.list.selected); got != "0b8c2f6e" {
		t.Errorf("selected %s after refresh, want 0b8c2f6e still", got)
	}
	if m.list.cursor != 2 {
		t.Errorf("cursor %d, want 2", m.list.cursor)
	}
}

func TestOfflineAndRecovery(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	src.setDown(true)
	_, cmd := m.Update(tickMsg{})
	if cmd == nil {
		t.Fatal("tick returned no command")
	}
	// Until the tick's read is answered, another tick reads nothing more.
	if m.loadSandboxes() != nil {
		t.Error("a second list read started while one was in flight")
	}
	load(m)
	if m.offline == nil {
		t.Fatal("offline not set after a failed refresh")
	}
	view := m.View()
	for _, want := range []string{"reconnecting…", "server unreachable", "build"} {
		if !strings.Contains(view, want) {
			t.Errorf("offline view lacks %q:\n%s", want, view)
		}
	}
	src.setDown(false)
	load(m)
	if m.offline != nil || strings.Contains(m.View(), "reconnecting") {
		t.Errorf("still offline after the server answered again:\n%s", m.View())
	}
}

func TestDestroyConfirm(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	keys(m, "d")
	if m.confirm == "" || !strings.Contains(m.View(), "destroy sandbox 7f3a9d21") {
		t.Fatalf("d did not ask to confirm:\n%s", m.View())
	}
	if cmd := keys(m, "n"); cmd != nil || m.confirm != "" {
		t.Fatalf("n did not cancel (cmd %v, confirm %q)", cmd != nil, m.confirm)
	}
	keys(m, "d")
	if isQuit(keys(m, "q")) || m.confirm == "" {
		t.Fatal("a key other than y/n ended the confirmation")
	}
	cmd := keys(m, "y")
	if cmd == nil {
		t.Fatal("y returned no command")
	}
	m.Update(cmd())
	if diff := cmp.Diff([]string{src.sandboxes[1].ID}, src.deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if !strings.Contains(m.View(), "destroyed 7f3a9d21") {
		t.Errorf("no note after destroying:\n%s", m.View())
	}
	// Destroyed sandboxes cannot be destroyed again.
	keys(m, "G", "d")
	if m.confirm != "" {
		t.Errorf("asked to destroy a destroyed sandbox")
	}
}

func TestCreateForm(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	keys(m, "c", "right", "tab")
	typeText(m, "2h")
	keys(m, "tab")
	typeText(m, "quick q")
	cmd := keys(m, "enter")
	if cmd == nil {
		t.Fatalf("enter returned no command:\n%s", m.View())
	}
	_, cmd = m.Update(cmd())
	want := []api.CreateSandboxRequest{{Size: api.SizeMedium, LifetimeMinutes: 120, Label: "quick q"}}
	if diff := cmp.Diff(want, src.created); diff != "" {
		t.Errorf("create requests (-want +got):\n%s", diff)
	}
	if m.current() != screenList {
		t.Errorf("still on screen %d after creating", m.current())
	}
	m.Update(cmd())
	if !strings.HasPrefix(m.list.selected, "new00001") {
		t.Errorf("selected %q, want the new sandbox", m.list.selected)
	}
}

func TestCreateFormRejectsBadLifetime(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	keys(m, "c", "tab")
	typeText(m, "soon")
	if cmd := keys(m, "enter"); cmd != nil {
		t.Fatal("a bad lifetime was submitted")
	}
	if !strings.Contains(m.View(), `error: lifetime "soon"`) {
		t.Errorf("no error shown:\n%s", m.View())
	}
}

func TestParseLifetime(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", 0, false},
		{"45", 45, false},
		{"30m", 30, false},
		{"1h30m", 90, false},
		{"90s", 2, false},
		{"0", 0, true},
		{"-5", 0, true},
		{"30s", 0, true},
		{"soon", 0, true},
	}
	for _, tt := range tests {
		got, err := parseLifetime(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseLifetime(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzParseLifetime(f *testing.F) {
	for _, s := range []string{"", "45", "2h", "1h30m", "-1m", "9999999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseLifetime(s)
		if err == nil && n < 0 {
			t.Errorf("parseLifetime(%q) = %d, a negative lifetime", s, n)
		}
	})
}

func TestExecPrompt(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	keys(m, "e")
	if m.current() != screenExec {
		t.Fatalf("e opened screen %d", m.current())
	}
	typeText(m, "q quits? no")
	cmd := keys(m, "enter")
	if cmd == nil || !strings.Contains(m.View(), "running q quits? no") {
		t.Fatalf("no run after enter:\n%s", m.View())
	}
	m.Update(cmd())
	if diff := cmp.Diff([]string{"q quits? no"}, src.execs); diff != "" {
		t.Errorf("execs (-want +got):\n%s", diff)
	}
	view := m.View()
	for _, want := range []string{"exit 1", "line two", "warning: something"} {
		if !strings.Contains(view, want) {
			t.Errorf("exec view lacks %q:\n%s", want, view)
		}
	}
	// An answer to an older run is dropped.
	m.Update(execDoneMsg{seq: 0, result: &api.ExecResult{Stdout: "stale"}})
	if strings.Contains(m.View(), "stale") {
		t.Error("a stale exec answer was shown")
	}
	keys(m, "esc")
	if m.current() != screenList {
		t.Errorf("esc left screen %d", m.current())
	}
}

func TestAttachComesBack(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	if cmd := keys(m, "a"); cmd == nil {
		t.Fatal("a returned no command")
	}
	if diff := cmp.Diff([]string{src.sandboxes[1].ID}, src.attached); diff != "" {
		t.Errorf("attached (-want +got):\n%s", diff)
	}
	m.Update(attachDoneMsg{id: src.sandboxes[1].ID})
	if !strings.Contains(m.View(), "detached from 7f3a9d21") {
		t.Errorf("no note after detaching:\n%s", m.View())
	}
}

// openTestLog opens the log of the first fake sandbox and feeds it the
// backlog as one batch, as the watch would.
func openTestLog(t *testing.T, src *fakeSource, m *Model) {
	t.Helper()
	load(m)
	keys(m, "j")
	if cmd := keys(m, "l"); cmd == nil {
		t.Fatal("l returned no command")
	}
	m.log.stop() // the test feeds the messages itself
	m.Update(logBatchMsg{gen: m.log.gen, entries: src.entries[src.sandboxes[0].ID]})
}

func TestLogViewer(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	openTestLog(t, src, m)
	if m.log.cursor != 2 || !m.log.follow {
		t.Fatalf("cursor %d follow %v, want the newest entry followed", m.log.cursor, m.log.follow)
	}
	// Duplicates (a resumed stream) and stale streams are dropped.
	exit := 0
	e4 := entry(src.sandboxes[0].ID, 4, "exec", `{"command":"ls"}`, &exit, 5)
	m.Update(logBatchMsg{gen: m.log.gen, entries: []api.LogEntry{src.entries[src.sandboxes[0].ID][2], e4}})
	m.Update(logBatchMsg{gen: m.log.gen - 1, entries: []api.LogEntry{entry("x", 9, "exec", `{}`, nil, 1)}})
	if len(m.log.entries) != 4 || m.log.cursor != 3 {
		t.Fatalf("%d entries, cursor %d; want 4 and 3", len(m.log.entries), m.log.cursor)
	}
	// Moving up stops following; new entries then leave the cursor alone.
	keys(m, "k")
	m.Update(logBatchMsg{gen: m.log.gen, entries: []api.LogEntry{entry(src.sandboxes[0].ID, 5, "exec", `{"command":"pwd"}`, &exit, 5)}})
	if m.log.follow || m.log.cursor != 2 {
		t.Errorf("follow %v cursor %d after k and a new entry; want paused at 2", m.log.follow, m.log.cursor)
	}
	keys(m, "f")
	if !m.log.follow || m.log.cursor != 4 {
		t.Errorf("f: follow %v cursor %d; want following at 4", m.log.follow, m.log.cursor)
	}
	// Search jumps to matches, backwards with N.
	keys(m, "/")
	typeText(m, "./...")
	keys(m, "enter")
	if m.log.cursor != 0 || m.log.follow {
		t.Errorf("search: cursor %d follow %v; want 0, paused", m.log.cursor, m.log.follow)
	}
	keys(m, "n")
	if m.log.cursor != 2 {
		t.Errorf("n: cursor %d, want 2", m.log.cursor)
	}
	keys(m, "N")
	if m.log.cursor != 0 {
		t.Errorf("N: cursor %d, want 0", m.log.cursor)
	}
	// Expanding shows the command and the exit code.
	keys(m, "n", "enter")
	view := m.View()
	for _, want := range []string{"command:", "go test ./... 2>&1 | tail -n 50", "exit code: 2", "timeout: 600"} {
		if !strings.Contains(view, want) {
			t.Errorf("expanded entry lacks %q:\n%s", want, view)
		}
	}
	keys(m, " ")
	if strings.Contains(m.View(), "exit code: 2") {
		t.Errorf("space did not collapse the entry:\n%s", m.View())
	}
}

func TestLogStreamReconnects(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	openTestLog(t, src, m)
	gen := m.log.gen
	_, cmd := m.Update(watchEndMsg{gen: gen, err: errDown})
	if cmd == nil {
		t.Fatal("a lost stream schedules no retry")
	}
	if !strings.Contains(m.View(), "stream lost, reconnecting") {
		t.Errorf("no reconnecting note:\n%s", m.View())
	}
	// The retry resumes after the last entry seen.
	_, cmd = m.Update(watchRetryMsg{gen: gen})
	if cmd == nil {
		t.Fatal("retry started no stream")
	}
	exit := 0
	done := make(chan tea.Msg, 2)
	for _, c := range cmd().(tea.BatchMsg) {
		go func() { done <- c() }()
	}
	src.appendEntry(entry(src.sandboxes[0].ID, 4, "exec", `{"command":"echo back"}`, &exit, 1))
	batch := (<-done).(logBatchMsg)
	m.Update(batch)
	m.log.stop()
	<-done
	if diff := cmp.Diff([]string{"e001", "e002", "e003", "e004"}, entryIDs(m.log.entries)); diff != "" {
		t.Errorf("entries after reconnecting (-want +got):\n%s", diff)
	}
	if m.log.lost != nil {
		t.Errorf("still lost after entries arrived: %v", m.log.lost)
	}
}

func entryIDs(es []api.LogEntry) []string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	return ids
}

func TestQuit(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		quit bool
	}{
		{"q on the list", []string{"q"}, true},
		{"q on the log", []string{"l", "q"}, true},
		{"q closes help and quits", []string{"?", "q"}, true},
		{"q in the exec prompt is text", []string{"e", "q"}, false},
		{"q in the create form is text", []string{"c", "tab", "q"}, false},
		{"ctrl+c in the exec prompt", []string{"e", "ctrl+c"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestModel(t, newFakeSource(), 80, 24)
			load(m)
			var cmd tea.Cmd
			for _, k := range tt.keys {
				cmd = keys(m, k)
			}
			defer m.log.stop()
			if got := isQuit(cmd); got != tt.quit {
				t.Errorf("quit = %v, want %v", got, tt.quit)
			}
		})
	}
}

// TestLogWindowLongLog scrolls a long log: the cursor's entry, and its
// details when expanded, are always on screen.
func TestLogWindowLongLog(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	openTestLog(t, src, m)
	exit := 0
	var batch []api.LogEntry
	for n := 4; n < 2004; n++ {
		batch = append(batch, entry(src.sandboxes[0].ID, n, "exec", fmt.Sprintf(`{"command":"echo %d"}`, n), &exit, 1))
	}
	m.Update(logBatchMsg{gen: m.log.gen, entries: batch})
	if v := m.View(); !strings.Contains(v, "› ") || !strings.Contains(v, "echo 2003") {
		t.Fatalf("following a long log does not show the newest entry:\n%s", v)
	}
	keys(m, "pgup", "pgup", "k", "enter")
	v := m.View()
	cur := m.log.entries[m.log.cursor]
	if !strings.Contains(v, "› ") || !strings.Contains(v, "      "+entrySummary(cur)) || !strings.Contains(v, "exit code: 0") {
		t.Errorf("cursor entry %s or its details are off screen:\n%s", cur.ID, v)
	}
	keys(m, "g")
	if v := m.View(); !strings.Contains(v, "› ") || !strings.Contains(v, "go build ./...") {
		t.Errorf("g does not show the oldest entry:\n%s", v)
	}
}

// TestTitleShowsOrganization: the title names the context and the
// organization the CLI acts for.
func TestTitleShowsOrganization(t *testing.T) {
	for _, c := range []struct{ ctx, org, want string }{
		{"hosted", "acme", "[hosted · org acme]"},
		{"", "acme", "[org acme]"},
		{"hosted", "", "[hosted]"},
	} {
		m := New(Options{Source: newFakeSource(), Now: func() time.Time { return epoch }, Location: time.UTC, Output: os.Stdout, Context: c.ctx, Organization: c.org})
		m.Update(tea.WindowSizeMsg{Width: 100, Height: 24})
		load(m)
		if got := m.titleLine(); !strings.Contains(got, c.want) {
			t.Errorf("context %q, org %q: title %q lacks %q", c.ctx, c.org, got, c.want)
		}
	}
}

// TestKeysOnUnusableSandbox: exec, attach and destroy on a paused or
// destroyed sandbox (in the list and in its detail) say why nothing
// happens, where they did nothing without a word.
func TestKeysOnUnusableSandbox(t *testing.T) {
	src := newFakeSource()
	src.sandboxes[1].Status = api.StatusPaused
	m := newTestModel(t, src, 80, 24)
	load(m)
	for i := 0; m.list.selected != src.sandboxes[1].ID && i < 3; i++ {
		keys(m, "j")
	}
	for _, k := range []string{"e", "a", "d"} {
		m.setNote("", false)
		if cmd := keys(m, k); cmd != nil || m.confirm != "" || m.current() != screenList {
			t.Errorf("%s on a paused sandbox did something", k)
		}
		if !strings.Contains(m.View(), "sandbox 7f3a9d21 is paused: p resumes it") {
			t.Errorf("%s on a paused sandbox said nothing:\n%s", k, m.View())
		}
	}
	keys(m, "G")
	m.setNote("", false)
	keys(m, "d")
	if m.confirm != "" || !strings.Contains(m.View(), "sandbox c41d0e88 is destroyed") {
		t.Errorf("d on a destroyed sandbox:\n%s", m.View())
	}
	m.Update(m.openDetail(src.sandboxes[2].ID)())
	m.setNote("", false)
	keys(m, "e")
	if m.current() != screenDetail || !strings.Contains(m.View(), "sandbox c41d0e88 is destroyed") {
		t.Errorf("e in a destroyed sandbox's detail:\n%s", m.View())
	}
}

// TestLogOfGoneSandbox: the log of a sandbox that was destroyed before it
// was opened, or while it is open, or that the server no longer knows,
// says so (keeping the entries it has) where it said "waiting for
// entries…" for ever: the watch of an ended sandbox stays open.
func TestLogOfGoneSandbox(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 100, 24)
	load(m)
	gone := src.sandboxes[2].ID
	m.openLog(gone)
	m.log.stop() // the test feeds the messages itself
	v := m.View()
	if strings.Contains(v, "waiting for entries") || !strings.Contains(v, "no entries: sandbox c41d0e88 is destroyed (expired)") {
		t.Errorf("log of a destroyed sandbox:\n%s", v)
	}

	m.back()
	m = newTestModel(t, src, 100, 24)
	openTestLog(t, src, m)
	if v := m.View(); strings.Contains(v, "no new entries") {
		t.Errorf("an active sandbox's log says it has ended:\n%s", v)
	}
	src.sandboxes[0].Status, src.sandboxes[0].DestroyReason = api.StatusDestroyed, "deleted"
	load(m)
	v = m.View()
	if !strings.Contains(v, "sandbox 0b8c2f6e is destroyed (deleted): no new entries") || !strings.Contains(v, "go test ./... 2>&1") {
		t.Errorf("log of a sandbox destroyed while open:\n%s", v)
	}

	m.back()
	m.openLog("9e9e9e9e-4444-4a5b-9c0d-000000000009")
	m.log.stop()
	m.Update(watchEndMsg{gen: m.log.gen, err: &api.Error{Status: 404, Code: api.CodeNotFound, Message: "sandbox not found"}})
	if v := m.View(); !strings.Contains(v, "no entries: sandbox 9e9e9e9e is gone") {
		t.Errorf("log of a sandbox the server does not know:\n%s", v)
	}
}

// TestLogInfoLineCounts: the log's first line says "1 entry" and "1
// match", not "1 entries" (seen on a sandbox destroyed after one exec).
func TestLogInfoLineCounts(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	keys(m, "j", "l")
	m.log.stop()
	m.Update(logBatchMsg{gen: m.log.gen, entries: src.entries[src.sandboxes[0].ID][:1]})
	if line := m.logInfoLine(); !strings.Contains(line, "· 1 entry") || strings.Contains(line, "entries") {
		t.Errorf("info line %q, want 1 entry", line)
	}
	m.log.query = "exec"
	if line := m.logInfoLine(); !strings.Contains(line, `"exec": 1 match`) || strings.Contains(line, "matches") {
		t.Errorf("info line %q, want 1 match", line)
	}
}

// TestAttachShellExited: an attachment that ends because the sandbox's
// shell exited comes back to the browser saying its exit code (as
// boxkite attach exits with it), as an error only when it is not 0.
func TestAttachShellExited(t *testing.T) {
	for _, c := range []struct {
		code    int
		want    string
		wantErr bool
	}{
		{code: 0, want: "exited (exit code 0)"},
		{code: 3, want: "exited (exit code 3)", wantErr: true},
		{code: 137, want: "exited (exit code 137)", wantErr: true},
	} {
		src := newFakeSource()
		m := newTestModel(t, src, 100, 24)
		load(m)
		m.Update(attachDoneMsg{id: src.sandboxes[1].ID, err: &ShellExited{Code: c.code}})
		want := "the shell in " + src.sandboxes[1].ID + " " + c.want
		if m.note != want || m.noteErr != c.wantErr {
			t.Errorf("exit %d: note %q (error %v), want %q (error %v)", c.code, m.note, m.noteErr, want, c.wantErr)
		}
		if !strings.Contains(m.View(), c.want) {
			t.Errorf("exit %d: the view does not say %q:\n%s", c.code, c.want, m.View())
		}
	}
}

// TestErrorsShowHints: an API error's hint (what to do) is shown with its
// message wherever the TUI reports a failed call, as the CLI prints its
// hint: line.
func TestErrorsShowHints(t *testing.T) {
	refused := &api.Error{
		Code: "validation_error", Message: "lifetime_minutes 6000 exceeds the maximum of 1440",
		Hint: "ask for at most 1440 minutes and extend the sandbox later",
	}
	tests := []struct {
		name string
		do   func(m *Model) tea.Cmd // the keys that make the failing call
	}{
		{"create", func(m *Model) tea.Cmd { return keys(m, "c", "enter") }},
		{"exec", func(m *Model) tea.Cmd { keys(m, "e"); typeText(m, "true"); return keys(m, "enter") }},
		{"destroy", func(m *Model) tea.Cmd { return keys(m, "d", "y") }},
		{"pause", func(m *Model) tea.Cmd { return keys(m, "p") }},
		{"detail", func(m *Model) tea.Cmd { return m.loadDetail(m.list.selected) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newFakeSource()
			m := newTestModel(t, src, 200, 24)
			load(m)
			src.refuse = refused
			if tt.name == "detail" {
				keys(m, "enter")
			}
			cmd := tt.do(m)
			if cmd == nil {
				t.Fatalf("no call made:\n%s", m.View())
			}
			m.Update(cmd())
			view := m.View()
			for _, want := range []string{refused.Message, "hint: " + refused.Hint} {
				if !strings.Contains(view, want) {
					t.Errorf("the screen lacks %q:\n%s", want, view)
				}
			}
		})
	}
}

// TestExecStatusKeepsExitCode: a command longer than the screen is cut,
// not its exit code and duration after it.
func TestExecStatusKeepsExitCode(t *testing.T) {
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	load(m)
	keys(m, "e")
	typeText(m, "printf '%s\\n' "+strings.Repeat("long-argument ", 12))
	cmd := keys(m, "enter")
	if cmd == nil {
		t.Fatalf("no run after enter:\n%s", m.View())
	}
	m.Update(cmd())
	view := m.View()
	if !strings.Contains(view, "exit 1  42ms") {
		t.Errorf("the exit code and duration are not shown:\n%s", view)
	}
	for i, line := range strings.Split(view, "\n") {
		if w := ansi.StringWidth(line); w > 80 {
			t.Errorf("line %d is %d wide: %q", i, w, line)
		}
	}
}
