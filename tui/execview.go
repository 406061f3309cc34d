package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/boxkite/boxkite/client/api"
)

type execState struct {
	id      string
	input   textinput.Model
	seq     int // numbers runs, so a late answer to an older one is dropped
	running string
	ran     string
	result  *api.ExecResult
	err     error
	top     int // first output line shown
}

type execDoneMsg struct {
	seq    int
	result *api.ExecResult
	err    error
}

func (m *Model) openExec(id string) tea.Cmd {
	if id == "" {
		return nil
	}
	if m.exec.id != id || m.exec.input.Prompt == "" {
		m.exec = execState{id: id, input: newTextInput("$ "), seq: m.exec.seq}
		m.exec.input.Placeholder = "command to run in the sandbox"
		m.exec.input.Width = max(m.width-12, 10)
	}
	m.push(screenExec)
	return m.exec.input.Focus()
}

func (e *execState) done(msg execDoneMsg) {
	if msg.seq != e.seq {
		return
	}
	e.ran, e.running = e.running, ""
	e.result, e.err, e.top = msg.result, msg.err, 0
}

func (e *execState) updateInput(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	e.input, cmd = e.input.Update(msg)
	return cmd
}

func (m *Model) execKey(msg tea.KeyMsg) tea.Cmd {
	e, k := &m.exec, m.keys
	switch {
	case key.Matches(msg, k.Back):
		e.input.Blur()
		return m.back()
	case key.Matches(msg, k.PageUp):
		e.top = max(e.top-(m.bodyHeight()-4), 0)
		return nil
	case key.Matches(msg, k.PageDown):
		e.top += m.bodyHeight() - 4
		return nil
	case msg.Type == tea.KeyEnter:
		command := strings.TrimSpace(e.input.Value())
		if command == "" || e.running != "" {
			return nil
		}
		e.seq++
		e.running = command
		e.input.SetValue("")
		src, id, seq := m.src, e.id, e.seq
		return func() tea.Msg {
			// The command's own timeout, plus room for the round trip.
			ctx, cancel := context.WithTimeout(context.Background(), api.DefaultExecTimeout*time.Second+apiTimeout)
			defer cancel()
			res, err := src.Exec(ctx, id, api.ExecRequest{Command: command})
			return execDoneMsg{seq: seq, result: res, err: err}
		}
	}
	return e.updateInput(msg)
}

func (m *Model) execView() string {
	e := &m.exec
	var b strings.Builder
	b.WriteString(e.input.View() + "\n\n")
	switch {
	case e.running != "":
		b.WriteString(m.st.dim.Render("running "+oneLine(e.running)+"…") + "\n")
		return b.String()
	case e.err != nil:
		b.WriteString(m.st.err.Render("exec "+oneLine(e.ran)+": "+oneLine(errHinted(e.err))) + "\n")
		return b.String()
	case e.result == nil:
		b.WriteString(m.st.dim.Render(fmt.Sprintf("runs with a %ds timeout; the output appears here", api.DefaultExecTimeout)) + "\n")
		return b.String()
	}
	r := e.result
	// The command is cut to fit, not what it came to.
	outcome := fmt.Sprintf("  exit %d  %s", r.ExitCode, time.Duration(r.DurationMS)*time.Millisecond)
	status := ansi.Truncate(oneLine(e.ran), max(m.width-ansi.StringWidth(outcome), 1), "…") + outcome
	if r.ExitCode == 0 {
		b.WriteString(m.st.ok.Render(fit(status, m.width)) + "\n")
	} else {
		b.WriteString(m.st.err.Render(fit(status, m.width)) + "\n")
	}
	var lines []string
	if r.Stdout != "" {
		lines = append(lines, wrap(r.Stdout, m.width)...)
	}
	if r.Stderr != "" {
		mark := m.st.stderrMark
		for _, l := range wrap(r.Stderr, max(m.width-len(mark), 1)) {
			lines = append(lines, m.st.warn.Render(mark+l))
		}
	}
	h := max(m.bodyHeight()-3, 1)
	e.top = min(e.top, max(len(lines)-h, 0))
	for _, l := range lines[e.top:min(e.top+h, len(lines))] {
		b.WriteString(l + "\n")
	}
	return b.String()
}
