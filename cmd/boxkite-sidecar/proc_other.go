//go:build !linux

package main

import "os"

// selfCommand runs this binary again with args.
func selfCommand(args ...string) (string, []string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, append([]string{"boxkite-sidecar"}, args...)
}

func lockDownServe() error { return nil }

func nameProcess() {}

// defaultSignals: jails and their signals are Linux's.
func defaultSignals() {}
