package main

import (
	"fmt"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// exitSignalNames are the signal names of RFC 4254 §6.10 by their Linux
// number (the sandbox's kernel's, whatever the bastion runs on).
var exitSignalNames = map[int]string{
	1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 6: "ABRT", 8: "FPE", 9: "KILL",
	10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM",
}

// exitSignalMsg is the payload of the "exit-signal" channel request.
type exitSignalMsg struct {
	Signal     string
	CoreDumped bool
	Error      string
	Lang       string
}

// exit ends session s as the command or shell in the sandbox ended, as
// OpenSSH's sshd does: the "exit-status" request with code, or, when
// signal (its number, 0 for none) ended it, the "exit-signal" request
// naming it instead (OpenSSH's ssh then exits 255, and Go's x/crypto/ssh
// reports the signal); then the channel closes.
func exit(s ssh.Session, code, signal int) {
	if signal == 0 {
		_ = s.Exit(code)
		return
	}
	name, ok := exitSignalNames[signal]
	if !ok {
		name = "SIG@openssh.com" // what sshd names a signal RFC 4254 does not
	}
	_, _ = s.SendRequest("exit-signal", false, gossh.Marshal(exitSignalMsg{Signal: name}))
	_ = s.Close()
}

// memoryLimitNote is the line a command killed at the sandbox's memory
// limit ends with on the session's stderr (the control plane's exit frame
// says so: api.StopReasonMemoryLimit), as `boxkite exec` says it, before
// the session exits as the kill left it. "\r\n": on a PTY the terminal
// is in raw mode.
func memoryLimitNote(code int) string {
	return fmt.Sprintf("boxkite-bastion: the command was killed at the sandbox's memory limit (exit code %d)\r\n"+
		"hint: a larger --size of 'boxkite session create' (small, medium, large) gives a sandbox more memory\r\n", code)
}
