//go:build !linux || !(amd64 || arm64)

package sidecar

import (
	"errors"
	"os/exec"
)

// errNoSpawn says spawn cannot start cmd; os/exec will.
var errNoSpawn = errors.New("spawn: not supported")

// spawn is Linux's on amd64 and arm64 (spawn_linux.go).
func spawn(*exec.Cmd, [3]int, bool) (pid, pidfd int, err error) { return 0, -1, errNoSpawn }
