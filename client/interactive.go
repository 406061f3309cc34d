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

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
)

// interactiveChunk is the most stdin one frame carries.
const interactiveChunk = 32 << 10

// An Interactive is a running interactive exec (StartInteractive): a
// command with streamed stdin, on a PTY or on pipes.
type Interactive struct {
	conn       *websocket.Conn
	writeMu    sync.Mutex
	signal     int    // set by Run from the exit frame
	stopReason string // likewise
}

// Signal is, after Run returned an exit code, the number of the signal
// that ended the command (the code is then 128+Signal), or 0 when it
// exited: it tells `exit 130` from a SIGINT.
func (x *Interactive) Signal() int { return x.signal }

// StopReason is, after Run returned an exit code, why the control plane
// says the command was stopped: api.StopReasonMemoryLimit when it was
// killed at the sandbox's memory limit, else "".
func (x *Interactive) StopReason() string { return x.stopReason }

// StartInteractive starts req in sandbox id (WS …/exec/interactive). ctx
// bounds the whole command, not just the start. The client's credential
// may be an API key or a takeover token. A refusal (allowlist, a
// read-only token, a sandbox that is not active) is an *api.Error.
func (c *Client) StartInteractive(ctx context.Context, id string, req api.InteractiveRequest) (*Interactive, error) {
	const route = "/v1/sandboxes/{id}/exec/interactive"
	u := strings.TrimRight(c.BaseURL, "/") + "/v1/sandboxes/" + url.PathEscape(id) + "/exec/interactive?" + req.Query().Encode()
	hdr := http.Header{"User-Agent": {c.userAgent()}}
	if c.APIKey != "" {
		hdr.Set("Authorization", "Bearer "+c.APIKey)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.resty().GetClient(), HTTPHeader: hdr})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			var b []byte
			if resp.Body != nil {
				b, _ = io.ReadAll(resp.Body)
			}
			return nil, c.dialRefused(resp.StatusCode, resp.Header, b)
		}
		return nil, c.transportError(ctx, http.MethodGet, route, err)
	}
	conn.SetReadLimit(1 << 20)
	return &Interactive{conn: conn}, nil
}

func (x *Interactive) control(ctx context.Context, c api.InteractiveControl) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	return x.conn.Write(ctx, websocket.MessageText, b)
}

// Resize sets the PTY's size; without a PTY it does nothing.
func (x *Interactive) Resize(ctx context.Context, cols, rows int) error {
	return x.control(ctx, api.InteractiveControl{Type: api.InteractiveResize, Cols: cols, Rows: rows})
}

// SendSignal sends the command's process group signal (api.SignalINT,
// …) while it runs; a name the sandbox does not know is dropped. How the
// command takes it shows in Run's exit code.
func (x *Interactive) SendSignal(ctx context.Context, signal string) error {
	return x.control(ctx, api.InteractiveControl{Type: api.InteractiveSignal, Name: signal})
}

// Run copies stdin to the command (and then ends its input) while writing
// its output to stdout and stderr, and returns its exit code once it
// ended. On a PTY everything arrives on stdout. stdin may be nil. Run
// returns when the command has ended, even if stdin has not.
func (x *Interactive) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	defer x.conn.CloseNow()
	if stdin != nil {
		go x.feed(ctx, stdin)
	}
	for {
		typ, data, err := x.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("interactive exec: %w", ctx.Err())
			}
			var ce websocket.CloseError
			if errors.As(err, &ce) && ce.Code == api.CloseSandboxEnded {
				return 0, &SandboxEndedError{Reason: cmp.Or(ce.Reason, "the sandbox ended")}
			}
			if errors.As(err, &ce) && ce.Reason != "" {
				// The server says why: a revoked credential, a sandbox
				// that ended the command without an exit status.
				return 0, fmt.Errorf("interactive exec: the connection closed before the command ended: %s", ce.Reason)
			}
			return 0, fmt.Errorf("interactive exec: the connection ended before the command did: %w", err)
		}
		if typ == websocket.MessageText {
			var c api.InteractiveControl
			if json.Unmarshal(data, &c) == nil && c.Type == api.InteractiveExit {
				if c.ExitCode == nil {
					return 0, errors.New("interactive exec: the exit frame has no exit code")
				}
				if c.Message != "" {
					_, _ = io.WriteString(stderr, c.Message+"\n")
				}
				_ = x.conn.Close(websocket.StatusNormalClosure, "")
				x.signal, x.stopReason = c.Signal, c.StopReason
				return *c.ExitCode, nil
			}
			continue
		}
		if len(data) == 0 {
			continue
		}
		w := stdout
		if data[0] == api.StreamStderr {
			w = stderr
		}
		if _, err := w.Write(data[1:]); err != nil {
			return 0, fmt.Errorf("interactive exec: write output: %w", err)
		}
	}
}

// feed sends stdin in frames, then the end of input.
func (x *Interactive) feed(ctx context.Context, stdin io.Reader) {
	buf := make([]byte, interactiveChunk+1)
	buf[0] = api.StreamStdin
	for {
		n, err := stdin.Read(buf[1:])
		if n > 0 {
			x.writeMu.Lock()
			werr := x.conn.Write(ctx, websocket.MessageBinary, buf[:n+1])
			x.writeMu.Unlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			_ = x.control(ctx, api.InteractiveControl{Type: api.InteractiveEOF})
			return
		}
	}
}
