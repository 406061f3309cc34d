package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// A program in the sandbox's terminal (an agent's TUI, vim, less) sets
// modes of this terminal: the alternate screen, mouse reporting, a hidden
// cursor, bracketed paste. It resets them when it exits, but not when the
// user detaches with the program still running: the local terminal then
// stayed on the alternate screen, with the cursor hidden and every mouse
// move typed into the shell as escape sequences. modeWriter follows the
// modes set through it and, when the attachment ends, resets those still
// set.

// decMode is a DEC private mode and its default state.
type decMode struct {
	mode int
	on   bool
}

// restoredModes are the DEC private modes modeWriter follows, in the order
// their resets are written (the alternate screen first, so the rest apply
// to the normal one; the cursor last), with their default state.
func restoredModes() []decMode {
	return []decMode{
		{1049, false}, {1047, false}, {47, false}, // alternate screen
		{1000, false}, {1002, false}, {1003, false}, {1005, false}, {1006, false}, {1015, false}, // mouse
		{1004, false}, // focus events
		{2004, false}, // bracketed paste
		{2026, false}, // synchronized output
		{1, false},    // application cursor keys
		{7, true},     // autowrap
		{25, true},    // cursor shown
	}
}

// modeWriter passes terminal output through to w, following the modes it
// sets; end stops it and writes the resets. Safe for one writer and end
// from another goroutine.
type modeWriter struct {
	mu     sync.Mutex
	w      io.Writer
	ended  bool
	modes  map[int]bool // the modes set or reset so far
	kitty  int          // keyboard-protocol flags pushed (CSI > n u), less those popped
	keypad bool         // application keypad (ESC =)
	esc    bool         // after ESC
	csi    []byte       // inside CSI: its parameter and intermediate bytes; nil outside
}

func newModeWriter(w io.Writer) *modeWriter {
	return &modeWriter{w: w, modes: map[int]bool{}}
}

func (m *modeWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return len(p), nil // the user has left: nothing more reaches the screen
	}
	for _, b := range p {
		m.scan(b)
	}
	return m.w.Write(p)
}

// scan follows one byte of output.
func (m *modeWriter) scan(b byte) {
	switch {
	case m.csi != nil:
		if b >= 0x40 && b <= 0x7e {
			m.sequence(string(m.csi), b)
			m.csi = nil
		} else if b == 0x1b || len(m.csi) > 64 {
			m.csi, m.esc = nil, b == 0x1b
		} else {
			m.csi = append(m.csi, b)
		}
	case m.esc:
		m.esc = false
		switch b {
		case '[':
			m.csi = []byte{}
		case '=':
			m.keypad = true
		case '>':
			m.keypad = false
		case 0x1b:
			m.esc = true
		}
	case b == 0x1b:
		m.esc = true
	}
}

// sequence follows one control sequence, CSI params final.
func (m *modeWriter) sequence(params string, final byte) {
	switch {
	case (final == 'h' || final == 'l') && strings.HasPrefix(params, "?"):
		for _, f := range strings.Split(params[1:], ";") {
			if n, err := strconv.Atoi(f); err == nil {
				m.modes[n] = final == 'h'
			}
		}
	case final == 'u' && strings.HasPrefix(params, ">"):
		m.kitty++
	case final == 'u' && strings.HasPrefix(params, "<"):
		n, err := strconv.Atoi(params[1:])
		if err != nil || n < 1 {
			n = 1
		}
		m.kitty = max(m.kitty-n, 0)
	}
}

// end stops the output and, when restore is set, writes the resets of
// the modes still set.
func (m *modeWriter) end(restore bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return
	}
	m.ended = true
	if !restore {
		return
	}
	var b strings.Builder
	for _, r := range restoredModes() {
		if on, ok := m.modes[r.mode]; ok && on != r.on {
			final := 'l'
			if r.on {
				final = 'h'
			}
			fmt.Fprintf(&b, "\x1b[?%d%c", r.mode, final)
		}
	}
	if m.kitty > 0 {
		fmt.Fprintf(&b, "\x1b[<%du", m.kitty)
	}
	if m.keypad {
		b.WriteString("\x1b>")
	}
	if b.Len() > 0 {
		io.WriteString(m.w, b.String())
	}
}
