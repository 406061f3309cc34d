package main

import (
	"bytes"
	"net"

	"github.com/gliderlabs/ssh"
)

// preamblePrefix starts a line a client may send before its SSH version
// line to name the sandbox. `ssh <id>.boxkite` goes through a ProxyCommand
// (`boxkite ssh-proxy`, see `boxkite ssh-config`) because an ssh_config
// cannot derive the user name from the host name; the proxy sends
// "BOXKITE-SANDBOX <id>\r\n" first, and the SSH user name is then ignored.
// It only routes: authentication is still against that sandbox's account.
// x/crypto/ssh skips lines before the version line (RFC 4253 §4.2), so
// the SSH handshake itself never sees a difference.
const preamblePrefix = "BOXKITE-SANDBOX "

// maxPreambleLine bounds how much of a line before the version line is kept
// for parsing; x/crypto/ssh itself allows 255 bytes of such lines.
const maxPreambleLine = 255

// sandboxKey is the context key of a sandbox named by a preamble.
type sandboxKey struct{}

// sandboxOf is the sandbox a connection is for: the preamble's, else the
// SSH user name.
func sandboxOf(ctx ssh.Context, user string) string {
	if id, ok := ctx.Value(sandboxKey{}).(string); ok {
		return id
	}
	return user
}

// preambleConn watches the bytes a client sends before its version line
// and reports a sandbox preamble among them. Every byte still reaches the
// SSH server unchanged.
type preambleConn struct {
	net.Conn
	found func(id string)
	line  []byte
	done  bool // the version line started, or a line was too long: stop looking
}

func (c *preambleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done {
		c.scan(p[:n])
	}
	return n, err
}

func (c *preambleConn) scan(b []byte) {
	for _, ch := range b {
		if ch != '\n' {
			c.line = append(c.line, ch)
			if bytes.HasPrefix(c.line, []byte("SSH-")) || len(c.line) > maxPreambleLine {
				c.done, c.line = true, nil
				return
			}
			continue
		}
		line := bytes.TrimSuffix(c.line, []byte("\r"))
		c.line = c.line[:0]
		if id, ok := bytes.CutPrefix(line, []byte(preamblePrefix)); ok && sandboxIDPattern.Match(id) {
			c.found(string(id))
		}
	}
}
