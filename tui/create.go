package tui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/boxkite/boxkite/client/api"
)

var sizes = []string{api.SizeSmall, api.SizeMedium, api.SizeLarge}

// Fields of the create form, in tab order.
const (
	fieldSize = iota
	fieldLifetime
	fieldLabel
	fieldImage
	numFields
)

type createState struct {
	size       int
	lifetime   textinput.Model
	label      textinput.Model
	image      textinput.Model
	focus      int
	submitting bool
	err        string
}

type createdMsg struct {
	sb  *api.Sandbox
	err error
}

func (m *Model) openCreate() tea.Cmd {
	c := createState{
		lifetime: newTextInput(""),
		label:    newTextInput(""),
		image:    newTextInput(""),
	}
	c.lifetime.Placeholder = "server default (e.g. 30m, 2h)"
	c.label.Placeholder = "optional"
	c.image.Placeholder = "optional image id"
	m.create = c
	m.create.setWidth(m.width)
	m.push(screenCreate)
	return m.create.focusField(fieldSize)
}

func (c *createState) setWidth(w int) {
	for _, ti := range []*textinput.Model{&c.lifetime, &c.label, &c.image} {
		ti.Width = max(w-16, 10)
	}
}

func (c *createState) inputs() []*textinput.Model {
	return []*textinput.Model{fieldLifetime: &c.lifetime, fieldLabel: &c.label, fieldImage: &c.image, fieldSize: nil}
}

func (c *createState) focusField(f int) tea.Cmd {
	c.focus = (f + numFields) % numFields
	var cmd tea.Cmd
	for i, ti := range c.inputs() {
		if ti == nil {
			continue
		}
		if i == c.focus {
			cmd = ti.Focus()
		} else {
			ti.Blur()
		}
	}
	return cmd
}

func (c *createState) updateInput(msg tea.Msg) tea.Cmd {
	ti := c.inputs()[c.focus]
	if ti == nil {
		return nil
	}
	var cmd tea.Cmd
	*ti, cmd = ti.Update(msg)
	return cmd
}

// parseLifetime reads a lifetime as the CLI's --lifetime does: a Go
// duration (30m, 2h) or a bare number of minutes; "" is the server's default.
func parseLifetime(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 {
			return 0, errors.New("lifetime must be positive")
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("lifetime %q: want minutes or a duration like 30m or 2h", s)
	}
	if d < time.Minute {
		return 0, errors.New("lifetime must be at least a minute")
	}
	return int((d + time.Minute - 1) / time.Minute), nil
}

func (c *createState) request() (api.CreateSandboxRequest, error) {
	minutes, err := parseLifetime(c.lifetime.Value())
	if err != nil {
		return api.CreateSandboxRequest{}, err
	}
	return api.CreateSandboxRequest{
		Size:            sizes[c.size],
		LifetimeMinutes: minutes,
		Label:           strings.TrimSpace(c.label.Value()),
		ImageID:         strings.TrimSpace(c.image.Value()),
	}, nil
}

func (m *Model) createKey(msg tea.KeyMsg) tea.Cmd {
	c, k := &m.create, m.keys
	switch {
	case key.Matches(msg, k.Back):
		return m.back()
	case msg.Type == tea.KeyTab || msg.Type == tea.KeyDown:
		return c.focusField(c.focus + 1)
	case msg.Type == tea.KeyShiftTab || msg.Type == tea.KeyUp:
		return c.focusField(c.focus - 1)
	case c.focus == fieldSize && (msg.Type == tea.KeyLeft || msg.Type == tea.KeyRight):
		d := 1
		if msg.Type == tea.KeyLeft {
			d = -1
		}
		c.size = (c.size + d + len(sizes)) % len(sizes)
		return nil
	case msg.Type == tea.KeyEnter:
		if c.submitting {
			return nil
		}
		req, err := c.request()
		if err != nil {
			c.err = err.Error()
			return nil
		}
		c.err, c.submitting = "", true
		src := m.src
		return func() tea.Msg {
			sb, err := call(func(ctx context.Context) (*api.Sandbox, error) { return src.CreateSandbox(ctx, req) })
			return createdMsg{sb: sb, err: err}
		}
	}
	return c.updateInput(msg)
}

func (m *Model) created(msg createdMsg) tea.Cmd {
	c := &m.create
	c.submitting = false
	if msg.err != nil {
		c.err = errHinted(msg.err)
		return nil
	}
	if m.current() == screenCreate {
		m.back()
	}
	m.setNote("created sandbox "+msg.sb.ID, false)
	m.list.selected = msg.sb.ID
	return m.loadSandboxes()
}

func (m *Model) createView() string {
	c := &m.create
	label := func(f int, name string) string {
		marker := "  "
		if c.focus == f {
			marker = "› "
		}
		return marker + fmt.Sprintf("%-10s ", name)
	}
	var sz []string
	for i, s := range sizes {
		if i == c.size {
			sz = append(sz, m.st.selected.Render("["+s+"]"))
		} else {
			sz = append(sz, " "+s+" ")
		}
	}
	fields := []string{
		label(fieldSize, "size") + strings.Join(sz, " "),
		label(fieldLifetime, "lifetime") + c.lifetime.View(),
		label(fieldLabel, "label") + c.label.View(),
		label(fieldImage, "image") + c.image.View(),
	}
	var status string
	switch {
	case c.submitting:
		status = m.st.dim.Render("creating…")
	case c.err != "":
		status = m.st.err.Render("error: " + oneLine(c.err))
	default:
		status = m.st.dim.Render("enter creates the sandbox; esc cancels")
	}
	if m.bodyHeight() < 3+len(fields)+1 {
		// A terminal too short for the form: what is being typed in
		// first, and a failure above it, so at least that field shows.
		var lines []string
		if c.submitting || c.err != "" {
			lines = append(lines, status)
		}
		lines = append(lines, fields[c.focus])
		for i, f := range fields {
			if i != c.focus {
				lines = append(lines, f)
			}
		}
		return strings.Join(lines, "\n") + "\n"
	}
	return m.st.header.Render("Create a sandbox") + "\n\n" + strings.Join(fields, "\n") + "\n\n" + status + "\n"
}
