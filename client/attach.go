package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
)

// maxTerminalFrame bounds one frame from the server: terminal output, or the
// scrollback replayed when attaching.
const maxTerminalFrame = 16 << 20

// A Terminal is an attachment to the shared terminal of a sandbox (its PTY).
// Read returns the terminal's output, Write types into it, and Resize sets
// its size. Every attacher sees the same screen; the shell outlives the
// attachment. Read and Write may be used from different goroutines.
type Terminal struct {
	conn *websocket.Conn
	ctx  context.Context

	mu sync.Mutex // guards r: Read is not for concurrent use
	r  io.Reader  // the current binary message

	exit atomic.Pointer[api.PTYControl] // the shell's exit, once told
}

// Exited reports how the terminal's shell exited, once Read returned
// io.EOF for it: its exit code (128+signal when a signal ended it) and the
// signal's number, or 0. ok is false while it runs, after a detach (it
// kept running), and when the sandbox's sidecar is older than the exit
// message (api.PTYControlExit).
func (t *Terminal) Exited() (code, signal int, ok bool) {
	c := t.exit.Load()
	if c == nil {
		return 0, 0, false
	}
	return *c.ExitCode, c.Signal, true
}

// Attach connects to the terminal of sandbox id (WS …/takeover). ctx bounds
// the whole attachment, not just the dial. With readOnly the terminal only
// shows output; what is written is dropped. Needs an admin API key.
func (c *Client) Attach(ctx context.Context, id string, readOnly bool) (*Terminal, error) {
	q := url.Values{}
	if readOnly {
		q.Set("read_only", "1")
	}
	return c.attach(ctx, id, q, c.APIKey)
}

// AttachWithToken is Attach with a takeover token (see TakeoverToken)
// instead of the client's API key: the token is spent, and a read-only
// token gives a read-only terminal.
func (c *Client) AttachWithToken(ctx context.Context, id, token string) (*Terminal, error) {
	return c.attach(ctx, id, url.Values{"token": {token}}, "")
}

func (c *Client) attach(ctx context.Context, id string, q url.Values, key string) (*Terminal, error) {
	u := strings.TrimRight(c.BaseURL, "/") + "/v1/sandboxes/" + url.PathEscape(id) + "/takeover"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	hdr := http.Header{"User-Agent": {c.userAgent()}}
	if key != "" {
		hdr.Set("Authorization", "Bearer "+key)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.resty().GetClient(), HTTPHeader: hdr})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			// The server refused before upgrading, with an ordinary error
			// envelope; the dialer kept up to 1 KiB of it.
			var b []byte
			if resp.Body != nil {
				b, _ = io.ReadAll(resp.Body)
			}
			return nil, c.dialRefused(resp.StatusCode, resp.Header, b)
		}
		return nil, c.transportError(ctx, "GET", "/v1/sandboxes/{id}/takeover", err)
	}
	conn.SetReadLimit(maxTerminalFrame)
	return &Terminal{conn: conn, ctx: ctx}, nil
}

// TakeoverToken mints a single-use token, valid api.TakeoverTokenTTL, that
// opens sandbox id's terminal once (AttachWithToken, or as the SSH
// bastion's password). Needs an admin API key.
func (c *Client) TakeoverToken(ctx context.Context, id string, readOnly bool) (*api.TakeoverToken, error) {
	var tok api.TakeoverToken
	err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/takeover-token", api.TakeoverTokenRequest{ReadOnly: readOnly}, &tok, withID(id))
	if err != nil {
		return nil, err
	}
	return &tok, nil
}

// TakeoverRecording downloads a takeover's asciicast v2 recording (servers
// started with takeover recording on); a takeover_end audit entry's
// detail names it. It works after the sandbox is gone. Close the body.
func (c *Client) TakeoverRecording(ctx context.Context, id, recordingID string) (*Download, error) {
	return c.download(ctx, "/v1/sandboxes/{id}/takeover-recordings/"+url.PathEscape(recordingID), id, nil)
}

// BastionTakeoverToken asks, as boxkite-bastion (the client's APIKey is
// the server's bastion key), for a takeover token on behalf of the holder
// of a registered SSH key.
func (c *Client) BastionTakeoverToken(ctx context.Context, req api.BastionTokenRequest) (*api.TakeoverToken, error) {
	var tok api.TakeoverToken
	if err := c.do(ctx, http.MethodPost, "/v1/bastion/takeover-token", req, &tok, nil); err != nil {
		return nil, err
	}
	return &tok, nil
}

// Read reads terminal output. It returns io.EOF once the server closed the
// attachment normally (the shell exited, or the sandbox went away).
func (t *Terminal) Read(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		if t.r != nil {
			n, err := t.r.Read(p)
			if errors.Is(err, io.EOF) {
				t.r = nil
				err = nil
			}
			if n > 0 || err != nil {
				return n, err
			}
			continue
		}
		typ, r, err := t.conn.Reader(t.ctx)
		if err != nil {
			return 0, closeErr(err)
		}
		if typ != websocket.MessageBinary {
			// Text frames are control messages: the shell's exit status
			// before the close is kept for Exited.
			b, err := io.ReadAll(r)
			if err != nil {
				return 0, closeErr(err)
			}
			var c api.PTYControl
			if json.Unmarshal(b, &c) == nil && c.Type == api.PTYControlExit && c.ExitCode != nil {
				t.exit.Store(&c)
			}
			continue
		}
		t.r = r
	}
}

// SandboxEndedError ends an attachment whose sandbox was destroyed,
// expired or lost under it, or an interactive exec whose sandbox was
// also paused under it (close status api.CloseSandboxEnded); Reason is
// the server's account of it.
type SandboxEndedError struct{ Reason string }

func (e *SandboxEndedError) Error() string { return e.Reason }

// Paused reports whether the sandbox was paused, not ended (the close
// reason "sandbox <id> was paused while the command ran", or "sandbox
// <id> was paused" for a terminal): it can be resumed, and the command
// run again or the terminal attached again.
func (e *SandboxEndedError) Paused() bool {
	return strings.HasPrefix(e.Reason, "sandbox ") &&
		(strings.HasSuffix(e.Reason, " was paused while the command ran") || strings.HasSuffix(e.Reason, " was paused"))
}

// closeErr turns a normal close into io.EOF and says why otherwise.
func closeErr(err error) error {
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway:
		return io.EOF
	case -1:
		return fmt.Errorf("terminal: %w", err)
	}
	var ce websocket.CloseError
	errors.As(err, &ce)
	if ce.Code == api.CloseSandboxEnded {
		return &SandboxEndedError{Reason: cmp.Or(ce.Reason, "the sandbox ended")}
	}
	if ce.Reason != "" {
		return fmt.Errorf("terminal closed: %s", ce.Reason)
	}
	return fmt.Errorf("terminal closed: %w", err)
}

// Write types p into the terminal as one frame.
func (t *Terminal) Write(p []byte) (int, error) {
	if err := t.conn.Write(t.ctx, websocket.MessageBinary, p); err != nil {
		return 0, closeErr(err)
	}
	return len(p), nil
}

// Resize sets the terminal's size in character cells; the shell gets SIGWINCH.
func (t *Terminal) Resize(cols, rows int) error {
	b, err := json.Marshal(api.PTYControl{Type: api.PTYControlResize, Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	if err := t.conn.Write(t.ctx, websocket.MessageText, b); err != nil {
		return closeErr(err)
	}
	return nil
}

// Detach asks the server to end the attachment after what was written
// before: Read then returns the output the server had already relayed,
// and io.EOF. The shell keeps running. Unlike Close, no output in flight
// is dropped.
func (t *Terminal) Detach() error {
	b, err := json.Marshal(api.PTYControl{Type: api.PTYControlDetach})
	if err != nil {
		return err
	}
	if err := t.conn.Write(t.ctx, websocket.MessageText, b); err != nil {
		return closeErr(err)
	}
	return nil
}

// DetachWhenIdle is Detach once the shell has run what was written before
// (it waits for input again with none unread): Read then returns all the
// output until then, and io.EOF. A script's end of input, as sshd's shell
// reads it; the shell keeps running.
func (t *Terminal) DetachWhenIdle() error {
	b, err := json.Marshal(api.PTYControl{Type: api.PTYControlDetach, UntilIdle: true})
	if err != nil {
		return err
	}
	if err := t.conn.Write(t.ctx, websocket.MessageText, b); err != nil {
		return closeErr(err)
	}
	return nil
}

// Close detaches from the terminal; the shell keeps running for the next attacher.
func (t *Terminal) Close() error {
	return t.conn.Close(websocket.StatusNormalClosure, "detached")
}

// dialRefused is the error of a WebSocket dial answered without the
// upgrade: the server's refusal, or, for a 2xx answer (a static site's
// page, a proxy that does not pass WebSockets on to a server answering
// 200), CodeBadResponse, since boxkite answers no dial with a 2xx.
func (c *Client) dialRefused(status int, header http.Header, body []byte) error {
	if err := c.errorFrom(status, header, body); err != nil {
		return err
	}
	return c.badResponse(status, header)
}
