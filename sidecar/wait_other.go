//go:build !linux

package sidecar

import "os/exec"

// waitCmd is cmd.Wait; on Linux it waits for the exit without blocking a
// thread (see wait_linux.go).
func waitCmd(cmd *exec.Cmd) error { return cmd.Wait() }
