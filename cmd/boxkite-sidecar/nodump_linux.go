package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// noDump makes the process non-dumpable. Exec resets the flag, so the serve
// process sets it itself even though init already did.
func noDump() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("clear dumpable: %w", err)
	}
	return nil
}
