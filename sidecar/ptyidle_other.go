//go:build unix && !linux

package sidecar

import (
	"os"

	"github.com/creack/pty"
)

// shellIdle cannot tell off Linux: a shell is taken to be idle at once.
func shellIdle(*os.File, int) (bool, error) { return true, nil }

// pendingOutput cannot tell off Linux: nothing is taken to be pending.
func pendingOutput(*os.File) (int, error) { return 0, nil }

// pollable returns master: off Linux a flush does not wait for the pump.
func pollable(master *os.File) (*os.File, error) { return master, nil }

// setWinsize resizes the terminal whose master is f.
func setWinsize(f *os.File, cols, rows uint16) error {
	return pty.Setsize(f, &pty.Winsize{Cols: cols, Rows: rows})
}
