package tui

import (
	"bytes"
	"os"
	"regexp"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/boxkite/boxkite/client/api"
	"github.com/charmbracelet/x/exp/teatest"
)

// pausedRow is the list's row of a sandbox 3 minutes old that is paused:
// its age, then "paused" where the expiry goes.
var pausedRow = regexp.MustCompile(`3m +paused`)

// waitFor waits (up to a generous deadline) until the program has drawn want.
func waitFor(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

// TestFlow drives the whole program: list, log with a live entry, a lost
// server, exec, and quitting.
func TestFlow(t *testing.T) {
	src := newFakeSource()
	m := New(Options{Source: src, Now: func() time.Time { return epoch }, Location: time.UTC, Output: os.Stdout, Refresh: 20 * time.Millisecond})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))

	waitFor(t, tm, "scratch")
	tm.Type("j")
	tm.Type("l")
	waitFor(t, tm, "go test ./... 2>&1")

	exit := 0
	src.appendEntry(entry(src.sandboxes[0].ID, 4, "exec", `{"command":"echo from-elsewhere"}`, &exit, 2))
	waitFor(t, tm, "echo from-elsewhere")

	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	waitFor(t, tm, "sandboxes (3)")
	src.setDown(true)
	waitFor(t, tm, "reconnecting…")
	src.setDown(false)
	// The title is redrawn without "reconnecting…".
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		i := bytes.LastIndex(b, []byte("sandboxes (3)"))
		if i < 0 {
			return false
		}
		line, _, _ := bytes.Cut(b[i:], []byte("\n"))
		return !bytes.Contains(line, []byte("reconnecting"))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))

	tm.Type("e")
	tm.Type("uname")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitFor(t, tm, "line two")
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	tm.Type("q")

	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	if final.log.cancel != nil {
		t.Error("the log stream is still open after quitting")
	}
	if final.offline != nil {
		t.Errorf("offline after the server came back: %v", final.offline)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.execs) != 1 || src.execs[0] != "uname" {
		t.Errorf("execs = %q, want [uname]", src.execs)
	}
}

// TestPauseResumeKey pauses the selected sandbox with p, shows it paused,
// and resumes it with p again (issue 22).
func TestPauseResumeKey(t *testing.T) {
	src := newFakeSource()
	m := New(Options{Source: src, Now: func() time.Time { return epoch }, Location: time.UTC, Output: os.Stdout, Refresh: 20 * time.Millisecond})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 24))
	waitFor(t, tm, "scratch")
	tm.Type("p")
	// The note, and the list reloaded with the row paused (its expiry
	// column says so): a p before the reload would pause it again. A sleep
	// here raced the reload under load.
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("paused 7f3a9d21")) && pausedRow.Match(b)
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Type("p")
	waitFor(t, tm, "resumed 7f3a9d21")
	tm.Type("q")
	tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second))
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.paused) != 2 || src.paused[0] != api.StatusPaused || src.paused[1] != api.StatusActive {
		t.Errorf("statuses set = %q, want [paused active]", src.paused)
	}
}
