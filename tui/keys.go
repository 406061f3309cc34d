package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// keyMap is the one list of key bindings. The help bar and the full help
// (?) are generated from it, so what they say is what the keys do.
type keyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding

	Open, Log, Exec, Attach, Create, Destroy, Pause, Refresh, Sort, Filter key.Binding

	Follow, Search, Next, Prev, Expand key.Binding

	NextField, PrevField, Choose, Submit key.Binding

	Yes, No, Back, Help, Quit key.Binding
}

func newKeyMap() keyMap {
	b := func(help string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keys[0], help))
	}
	km := keyMap{
		Up:       b("up", "up", "k"),
		Down:     b("down", "down", "j"),
		PageUp:   b("page up", "pgup", "ctrl+u"),
		PageDown: b("page down", "pgdown", "ctrl+d"),
		Top:      b("top", "g", "home"),
		Bottom:   b("bottom", "G", "end"),

		Open:    b("open", "enter"),
		Log:     b("log", "l"),
		Exec:    b("exec", "e"),
		Attach:  b("attach", "a"),
		Create:  b("create", "c"),
		Destroy: b("destroy", "d"),
		Pause:   b("pause/resume", "p"),
		Refresh: b("refresh", "r"),
		Sort:    b("sort", "s"),
		Filter:  b("filter", "/"),

		Follow: b("follow", "f"),
		Search: b("search", "/"),
		Next:   b("next", "n"),
		Prev:   b("previous", "N"),
		Expand: b("expand", "enter", " "),

		NextField: b("next field", "tab", "down"),
		PrevField: b("prev field", "shift+tab", "up"),
		Choose:    b("change size", "left", "right"),
		Submit:    b("submit", "enter"),

		Yes:  b("yes", "y"),
		No:   b("no", "n", "esc"),
		Back: b("back", "esc"),
		Help: b("help", "?"),
		Quit: b("quit", "q", "ctrl+c"),
	}
	km.Up.SetHelp("↑/k", "up")
	km.Down.SetHelp("↓/j", "down")
	km.Choose.SetHelp("←/→", "change size")
	km.Expand.SetHelp("enter", "expand")
	km.No.SetHelp("n/esc", "no")
	return km
}

// forScreen is the help of one screen: the short bar, and the groups of
// the full help.
func (k keyMap) forScreen(s screen) (short []key.Binding, full [][]key.Binding) {
	nav := []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
	switch s {
	case screenList:
		short = []key.Binding{k.Open, k.Log, k.Exec, k.Create, k.Destroy, k.Filter, k.Help, k.Quit}
		full = [][]key.Binding{nav, {k.Open, k.Log, k.Exec, k.Attach}, {k.Create, k.Destroy, k.Pause, k.Refresh}, {k.Filter, k.Sort, k.Help, k.Quit}}
	case screenDetail:
		short = []key.Binding{k.Log, k.Exec, k.Attach, k.Destroy, k.Refresh, k.Back, k.Help, k.Quit}
		full = [][]key.Binding{{k.Log, k.Exec, k.Attach}, {k.Destroy, k.Pause, k.Refresh}, {k.Back, k.Help, k.Quit}}
	case screenLog:
		short = []key.Binding{k.Follow, k.Expand, k.Search, k.Next, k.Exec, k.Back, k.Help, k.Quit}
		full = [][]key.Binding{nav, {k.Follow, k.Expand}, {k.Search, k.Next, k.Prev}, {k.Exec, k.Attach, k.Back, k.Help, k.Quit}}
	case screenExec:
		short = []key.Binding{k.Submit, k.PageUp, k.PageDown, k.Back}
		full = [][]key.Binding{{k.Submit, k.PageUp, k.PageDown}, {k.Back}}
	case screenCreate:
		short = []key.Binding{k.NextField, k.PrevField, k.Choose, k.Submit, k.Back}
		full = [][]key.Binding{{k.NextField, k.PrevField, k.Choose}, {k.Submit, k.Back}}
	}
	return short, full
}

// navigate moves a list's cursor (move) for the keys every list shares:
// up and down a row or a page of page rows, to the top or the bottom of
// its n rows. It says whether msg was one of them.
func (k keyMap) navigate(msg tea.KeyMsg, page, n int, move func(int)) bool {
	switch {
	case key.Matches(msg, k.Up):
		move(-1)
	case key.Matches(msg, k.Down):
		move(1)
	case key.Matches(msg, k.PageUp):
		move(-page)
	case key.Matches(msg, k.PageDown):
		move(page)
	case key.Matches(msg, k.Top):
		move(-n)
	case key.Matches(msg, k.Bottom):
		move(n)
	default:
		return false
	}
	return true
}
