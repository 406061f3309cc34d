package sidecar

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/boxkite/boxkite/client/api"
)

// ptyStartError is err of starting a command on a new pseudo-terminal,
// as what says. ENOSPC is the jail's devpts out of them (64, jail.MaxPTYs):
// the sandbox's own processes hold them all, which is its user's to fix.
func ptyStartError(err error, what string) error {
	if errors.Is(err, syscall.ENOSPC) {
		return api.Errorf(http.StatusTooManyRequests, api.CodeLimitExceeded,
			"no pseudo-terminal left in the sandbox: its processes hold all it may open").
			WithHint("stop a process that holds one (`boxkite ps`, `boxkite kill`), or close a terminal of the sandbox")
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ptyExec serves POST /pty-exec: one command on a terminal of its own
// (programs that insist on a TTY: prompts, progress bars, curses), with
// input typed into it, run without a shell.
func (h *Handler) ptyExec(w http.ResponseWriter, r *http.Request) error {
	var req api.PTYExecRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	argv, err := splitWords(req.Command)
	if err != nil || len(argv) == 0 {
		return api.Invalid("command", "command must name a program, with balanced quotes", "it is split into words like a shell would, but not run by one: no pipes or $vars")
	}
	input, err := base64.StdEncoding.DecodeString(req.InputBytes)
	if err != nil {
		return api.Invalid("input_bytes", "input_bytes must be base64", "")
	}
	timeout := req.TimeoutSeconds
	switch {
	case timeout == 0:
		timeout = api.DefaultPTYTimeout
	case timeout < api.MinPTYTimeout || timeout > api.MaxPTYTimeout:
		// Refused, where the reference clamps it to 0.1..120
		// (boxkite-reference.md, POST /pty-exec): as exec and the pty_exec
		// tool refuse theirs, so a caller learns the limit.
		return api.Invalid("timeout_seconds",
			fmt.Sprintf("timeout_seconds must be between %g and %g seconds, got %g", api.MinPTYTimeout, api.MaxPTYTimeout, timeout),
			fmt.Sprintf("omit timeout_seconds for the default of %g seconds", api.DefaultPTYTimeout))
	}
	path, err := lookPath(h.env, argv[0])
	if err != nil {
		code := 127
		return writeJSON(w, http.StatusOK, api.PTYExecResult{Output: argv[0] + ": command not found\r\n", ExitCode: &code})
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir, cmd.Env = h.workspace, append(append([]string(nil), h.env...), "TERM=xterm")
	attr, err := h.sysProcAttr()
	if err != nil {
		return err
	}
	// A session of its own with the PTY as its controlling terminal.
	attr.Setpgid, attr.Setsid, attr.Setctty, attr.Ctty = false, true, true, 0
	f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: 120, Rows: 40}, attr)
	if err != nil {
		return ptyStartError(err, "start on a pty")
	}
	defer f.Close()
	h.oomFirst(cmd.Process.Pid)
	if len(input) > 0 {
		go func() { _, _ = f.Write(input) }()
	}
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		// Keep reading past the cap so the program never blocks on a full
		// terminal; what is past it is dropped.
		buf := make([]byte, 32<<10)
		for {
			n, err := f.Read(buf)
			if room := api.MaxPTYOutput - out.Len(); room > 0 {
				out.Write(buf[:min(n, room)])
			}
			if err != nil {
				return
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- waitCmd(cmd) }()
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(timeout*float64(time.Second)))
	defer cancel()
	res := api.PTYExecResult{}
	select {
	case err := <-waited:
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			return fmt.Errorf("wait for pty command: %w", err)
		}
		res.ExitCode = &code
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		res.TimedOut = true
	}
	// The terminal ends (EIO) once no process holds it; whatever is left
	// is read first, briefly.
	select {
	case <-read:
	case <-time.After(2 * time.Second):
		f.Close()
		<-read
	}
	res.Output = strings.ToValidUTF8(out.String(), "\uFFFD")
	return writeJSON(w, http.StatusOK, res)
}

// splitWords splits s into words as a POSIX shell does for a simple
// command's words: blanks separate, single quotes keep everything, double
// quotes keep everything but \" \\ \$ \` escapes, a backslash outside
// quotes escapes the next character. Nothing expands. An unbalanced quote
// or a trailing backslash is an error.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unbalanced single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unbalanced double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
