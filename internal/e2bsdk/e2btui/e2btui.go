// Package e2btui checks that what the E2B SDK flows did (package e2bsdk)
// shows in boxkite tui, for the tests of both drivers. It is apart from
// e2bsdk because teatest defines an -update flag, which would collide
// with the golden-file flags of the tests that import e2bsdk for its
// tenancy checks. It is test support, linked by tests only.
package e2btui

import (
	"bytes"
	"io"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/tui"
)

// Check checks the other half of issue 21's acceptance 3: what RunFlows did shows
// in boxkite tui. The TUI runs on a client of the server (as the CLI's
// boxkite tui does, attach aside), finds each sandbox of the flows in its
// list by id, opens its log and shows a call the SDK made there; expanded,
// the entry says it came through e2b.
func Check(t *testing.T, c *client.Client, res e2bsdk.Results) {
	t.Helper()
	for _, sb := range []struct{ id, entry string }{
		{res.SandboxID, "echo connected-out"}, // connect.mjs, from a second process
		{res.CodeSandboxID, "x + 1"},          // runCode
	} {
		m := tui.New(tui.Options{Source: tuiSource{c}, Output: io.Discard, Location: time.UTC, Refresh: 200 * time.Millisecond})
		tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(200, 50))
		waitFor(t, tm, sb.id[:8])
		tm.Type("/")
		tm.Type(sb.id)
		tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
		tm.Type("l")
		waitFor(t, tm, sb.entry)
		tm.Type("/")
		tm.Type(sb.entry)
		tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) // to the entry
		tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) // expand it
		waitFor(t, tm, "interface: e2b")
		tm.Type("q")
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	}
}

// waitFor waits until the program has drawn want (teatest fails t if it
// does not in time).
func waitFor(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
		teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

// tuiSource is boxkite tui's source without attaching (the CLI's adds it).
type tuiSource struct{ *client.Client }

func (tuiSource) Attach(string) tea.ExecCommand { return nil }
