package cli

import (
	"fmt"
	"io"
	"strings"
)

// timeoutNote is the line the sandbox adds to a command's stderr when it
// kills the command at its timeout (the sidecar's, as the reference's).
func timeoutNote(seconds int) string {
	return fmt.Sprintf("Command timed out after %ds", seconds)
}

// noteHold writes a command's stderr, holding back an end that could be
// the start of the sandbox's timeout note until more comes or the command
// ends: the CLI says itself that the command timed out (exitFor), so the
// note is dropped then instead of saying it twice. Anything else held is
// written at the end.
type noteHold struct {
	w    io.Writer
	note string
	held []byte
}

func (h *noteHold) Write(p []byte) (int, error) {
	buf := append(h.held, p...)
	k := min(len(buf), len(h.note))
	for ; k > 0; k-- {
		if strings.HasPrefix(h.note, string(buf[len(buf)-k:])) {
			break
		}
	}
	h.held = append([]byte(nil), buf[len(buf)-k:]...)
	if _, err := h.w.Write(buf[:len(buf)-k]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// end writes what is held back, or drops it when it is the whole note and
// dropNote is set (the command timed out).
func (h *noteHold) end(dropNote bool) error {
	held := h.held
	h.held = nil
	if len(held) == 0 || dropNote && string(held) == h.note {
		return nil
	}
	_, err := h.w.Write(held)
	return err
}
