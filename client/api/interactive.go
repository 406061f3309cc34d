package api

import (
	"net/url"
	"strconv"
)

// Interactive exec: WS /v1/sandboxes/{id}/exec/interactive (and the
// sidecar's /exec/interactive). One command, or the sftp subsystem, with
// its stdin streamed as it comes, on a pseudo-terminal or on pipes, and no
// output cap: what `ssh id@host 'cmd'`, `ssh -t`, scp, sftp and rsync need,
// where POST …/exec takes stdin up front and caps output. The request is
// the query string (InteractiveRequest.Query), so every refusal is a plain
// HTTP error before the upgrade. Then:
//
//   - binary frames carry bytes, the first byte naming the stream:
//     StreamStdin from the client, StreamStdout and StreamStderr to it
//     (on a PTY everything is StreamStdout);
//   - text frames are InteractiveControl: "resize", "eof" (end of
//     stdin) and "signal" (Name: SIGINT, SIGTERM, SIGHUP or SIGKILL, sent
//     to the command's process group, as an SSH client's signal request)
//     from the client, one "exit" to it when the command ended, after
//     the last output, before a normal close.
//
// Closing the WebSocket ends the command (its process group is killed).
// It is audited as an "exec" entry with detail.interactive set.
const (
	StreamStdin  byte = 0
	StreamStdout byte = 1
	StreamStderr byte = 2
)

// InteractiveControl types.
const (
	InteractiveResize = "resize"
	InteractiveEOF    = "eof"
	InteractiveSignal = "signal"
	InteractiveExit   = "exit"
)

// SubsystemSFTP is the one subsystem: an SFTP server run in the sandbox as
// the sandbox user, rooted at the workspace.
const SubsystemSFTP = "sftp"

// InteractiveControl is a text frame of an interactive exec.
type InteractiveControl struct {
	Type     string `json:"type"`
	Cols     int    `json:"cols,omitempty"`      // resize: 1..1000
	Rows     int    `json:"rows,omitempty"`      // resize: 1..1000
	ExitCode *int   `json:"exit_code,omitempty"` // exit
	Message  string `json:"message,omitempty"`   // exit: why, when the command could not start
	Name     string `json:"name,omitempty"`      // signal: SIGINT, SIGTERM, SIGHUP or SIGKILL
	// Signal is, on exit, the number of the signal that ended the command
	// (then ExitCode is 128+Signal, as a shell reports it); 0 when it
	// exited. It tells `exit 137` from a SIGKILL.
	Signal int `json:"signal,omitempty"`
	// StopReason is, on exit, StopReasonMemoryLimit when the control
	// plane found the command killed at the sandbox's memory limit (an
	// exit code 137 while the sandbox's OOM-kill count grew, as for
	// ExecResult.StopReason); "" otherwise, and always from the sidecar.
	StopReason string `json:"stop_reason,omitempty"`
}

// InteractiveRequest is what an interactive exec runs.
type InteractiveRequest struct {
	Command   string // shell command for /bin/sh -c; empty with a Subsystem
	Subsystem string // SubsystemSFTP, instead of a Command
	TTY       bool   // run on a pseudo-terminal
	Cols      int    // with TTY: the initial size (default 80x24)
	Rows      int
	Term      string // with TTY: TERM (default xterm-256color)
	Cwd       string // working directory; default the workspace
}

// Query encodes r as the route's query string.
func (r InteractiveRequest) Query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("command", r.Command)
	set("subsystem", r.Subsystem)
	if r.TTY {
		q.Set("tty", "1")
		if r.Cols > 0 && r.Rows > 0 {
			q.Set("cols", strconv.Itoa(r.Cols))
			q.Set("rows", strconv.Itoa(r.Rows))
		}
		set("term", r.Term)
	}
	set("cwd", r.Cwd)
	return q
}

// ParseInteractiveRequest decodes a query string made by Query, checking
// what can be checked without the sandbox: one of command and subsystem,
// a known subsystem, sizes in 1..1000, no NUL byte.
func ParseInteractiveRequest(q url.Values) (InteractiveRequest, error) {
	r := InteractiveRequest{
		Command: q.Get("command"), Subsystem: q.Get("subsystem"), Term: q.Get("term"), Cwd: q.Get("cwd"),
	}
	invalid := func(field, msg string) error {
		return &Error{Status: 422, Code: CodeValidation, Message: msg, Details: map[string]string{"field": field}}
	}
	switch {
	case r.Command == "" && r.Subsystem == "":
		return r, invalid("command", "an interactive exec needs a command or a subsystem")
	case r.Command != "" && r.Subsystem != "":
		return r, invalid("subsystem", "send a command or a subsystem, not both")
	case r.Subsystem != "" && r.Subsystem != SubsystemSFTP:
		return r, invalid("subsystem", "the only subsystem is sftp")
	}
	for _, s := range []string{r.Command, r.Term, r.Cwd} {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				return r, invalid("command", "the request contains a NUL byte")
			}
		}
	}
	if v := q.Get("tty"); v != "" {
		tty, err := strconv.ParseBool(v)
		if err != nil {
			return r, invalid("tty", "tty must be a boolean")
		}
		r.TTY = tty
	}
	r.Cols, r.Rows = 80, 24
	if c, rs := q.Get("cols"), q.Get("rows"); c != "" || rs != "" {
		cols, err1 := strconv.Atoi(c)
		rows, err2 := strconv.Atoi(rs)
		if err1 != nil || err2 != nil || cols < 1 || cols > 1000 || rows < 1 || rows > 1000 {
			return r, invalid("cols", "cols and rows must both be between 1 and 1000")
		}
		r.Cols, r.Rows = cols, rows
	}
	if r.Term == "" {
		r.Term = "xterm-256color"
	}
	return r, nil
}
