//go:build unix && !linux

package sidecar

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// sysProcAttr puts each command in its own process group, so a timeout or a
// cap can kill everything it started, and drops it to the sandbox user.
// Only the real sandbox needs Linux; this keeps tests of the API portable.
func (h *Handler) sysProcAttr() (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	switch ra := h.opts.RunAs; {
	case ra == nil:
	case ra.NestedUserNS:
		return nil, errors.New("nested user namespaces need Linux")
	default:
		attr.Credential = &syscall.Credential{Uid: uint32(ra.UID), Gid: uint32(ra.GID)}
	}
	return attr, nil
}

// oomFirst is Linux's; elsewhere there is no OOM score to set.
func (h *Handler) oomFirst(int) {}

// physicalDir needs Linux's /proc; elsewhere every command runs through sh.
func physicalDir(string) (string, bool) { return "", false }

// commandPipe is os.Pipe with its ends named: ours, the sidecar's, and
// theirs, the command's; read says ours is the read end.
func commandPipe(read bool) (ours, theirs *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("create pipe: %w", err)
	}
	if read {
		return r, w, nil
	}
	return w, r, nil
}

// outputPipe returns a pipe for a command's stdout or stderr: ours, the
// read end, and theirs, the command's, both blocking (watchGoroutines
// makes ours non-blocking).
func outputPipe() (ours, theirs int, err error) {
	var p [2]int
	syscall.ForkLock.RLock()
	err = syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, -1, fmt.Errorf("create pipe: %w", err)
	}
	return p[0], p[1], nil
}
