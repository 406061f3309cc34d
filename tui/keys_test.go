package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestNavigate: the keys every list shares move its cursor by a row, a
// page or to either end, and no other key moves it.
func TestNavigate(t *testing.T) {
	const page, rows = 7, 40
	for _, tt := range []struct {
		msg   tea.KeyMsg
		moved bool
		by    int
	}{
		{tea.KeyMsg{Type: tea.KeyUp}, true, -1},
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("j")}, true, 1},
		{tea.KeyMsg{Type: tea.KeyPgUp}, true, -page},
		{tea.KeyMsg{Type: tea.KeyCtrlD}, true, page},
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("g")}, true, -rows},
		{tea.KeyMsg{Type: tea.KeyEnd}, true, rows},
		{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("l")}, false, 0},
		{tea.KeyMsg{Type: tea.KeyEsc}, false, 0},
	} {
		var by int
		moved := newKeyMap().navigate(tt.msg, page, rows, func(n int) { by += n })
		if moved != tt.moved || by != tt.by {
			t.Errorf("navigate(%q) = %v, moved by %d; want %v, %d", tt.msg, moved, by, tt.moved, tt.by)
		}
	}
}
