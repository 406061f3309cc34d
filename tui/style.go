package tui

import (
	"io"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles are the TUI's lipgloss styles, made from one renderer so that
// turning colour off (NO_COLOR, a dumb terminal, tests) turns it off
// everywhere. Nothing the user must see relies on colour alone: the
// selected row also has a "›" marker.
type styles struct {
	title, header, selected, dim, err, warn, ok, match, key lipgloss.Style
	help                                                    help.Styles
	// stderrMark starts each line of a command's stderr when there is no
	// colour to tell it from stdout (NO_COLOR): the shell's "2>".
	stderrMark string
}

func newStyles(out io.Writer, color bool) styles {
	// color is the caller's decision (the CLI allows colour only on a
	// terminal, without NO_COLOR or TERM=dumb): termenv is told the output
	// is a terminal, so it picks the palette from TERM but does not veto
	// colour on rules of its own (it takes any terminal for a pipe when CI
	// is set).
	r := lipgloss.NewRenderer(out, termenv.WithTTY(color))
	if !color {
		r.SetColorProfile(termenv.Ascii)
	}
	s := styles{
		title:    r.NewStyle().Bold(true).Foreground(lipgloss.Color("39")),
		header:   r.NewStyle().Bold(true),
		selected: r.NewStyle().Reverse(true),
		dim:      r.NewStyle().Foreground(lipgloss.Color("245")),
		err:      r.NewStyle().Foreground(lipgloss.Color("196")).Bold(true),
		warn:     r.NewStyle().Foreground(lipgloss.Color("214")),
		ok:       r.NewStyle().Foreground(lipgloss.Color("42")),
		match:    r.NewStyle().Underline(true).Foreground(lipgloss.Color("214")),
		key:      r.NewStyle().Bold(true),
	}
	if !color {
		s.stderrMark = "2> "
	}
	s.help = help.Styles{
		ShortKey:       s.key,
		ShortDesc:      s.dim,
		ShortSeparator: s.dim,
		Ellipsis:       s.dim,
		FullKey:        s.key,
		FullDesc:       s.dim,
		FullSeparator:  s.dim,
	}
	return s
}
