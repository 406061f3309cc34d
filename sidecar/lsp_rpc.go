package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
)

// maxRPCMessage bounds one message from a language server.
const maxRPCMessage = 64 << 20

// rpcConn speaks JSON-RPC 2.0 with Content-Length framing, as LSP does over
// stdio. Requests from the server are answered with empty results, which
// every server takes as "use your defaults".
type rpcConn struct {
	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan rpcMessage
	err     error         // why reading ended
	done    chan struct{} // closed when reading ended
}

type rpcMessage struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *rpcError        `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// newRPCConn starts reading r; w carries what we send.
func newRPCConn(r io.Reader, w io.Writer) *rpcConn {
	c := &rpcConn{w: w, pending: map[int64]chan rpcMessage{}, done: make(chan struct{})}
	go c.read(bufio.NewReaderSize(r, 64<<10))
	return c
}

func (c *rpcConn) read(br *bufio.Reader) {
	err := c.readLoop(br)
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

func (c *rpcConn) readLoop(br *bufio.Reader) error {
	tp := textproto.NewReader(br)
	for {
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			return fmt.Errorf("read header: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(hdr.Get("Content-Length")))
		if err != nil || n < 0 || n > maxRPCMessage {
			return fmt.Errorf("bad Content-Length %q", hdr.Get("Content-Length"))
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return fmt.Errorf("read body: %w", err)
		}
		var m rpcMessage
		if err := json.Unmarshal(body, &m); err != nil {
			continue // not ours to fix; the next message may be fine
		}
		switch {
		case m.Method != "" && m.ID != nil:
			// Replied from another goroutine: a server that blocks writing
			// to us while we block writing to it would deadlock otherwise.
			go func() { _ = c.send(rpcMessage{ID: m.ID, Result: defaultResult(m)}) }()
		case m.Method != "":
			// A notification (diagnostics, progress, logs): not asked for.
		case m.ID != nil:
			id, err := strconv.ParseInt(string(*m.ID), 10, 64)
			if err != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

// defaultResult answers a request from the server: one null per item asked
// of workspace/configuration, null otherwise.
func defaultResult(m rpcMessage) json.RawMessage {
	if m.Method == "workspace/configuration" {
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			b, _ := json.Marshal(make([]any, len(p.Items)))
			return b
		}
	}
	return json.RawMessage("null")
}

func (c *rpcConn) send(m rpcMessage) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		return fmt.Errorf("send %s: %w", m.Method, err)
	}
	return nil
}

func (c *rpcConn) notify(method string, params any) error {
	b, err := marshalParams(params)
	if err != nil {
		return err
	}
	return c.send(rpcMessage{Method: method, Params: b})
}

// marshalParams leaves nil params out of the message: LSP's void.
func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	return b, nil
}

// call sends a request and waits for its response until ctx ends, when it
// asks the server to cancel it.
func (c *rpcConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	b, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan rpcMessage, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	raw := json.RawMessage(strconv.FormatInt(id, 10))
	if err := c.send(rpcMessage{ID: &raw, Method: method, Params: b}); err != nil {
		forget()
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, m.Error)
		}
		return m.Result, nil
	case <-c.done:
		forget()
		c.mu.Lock()
		defer c.mu.Unlock()
		return nil, fmt.Errorf("%s: connection closed: %w", method, c.err)
	case <-ctx.Done():
		forget()
		_ = c.notify("$/cancelRequest", map[string]int64{"id": id})
		return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
}

// completionItems normalises a completion result: null, a list of items,
// or a CompletionList holding them.
func completionItems(result json.RawMessage) ([]json.RawMessage, error) {
	items := []json.RawMessage{}
	trimmed := strings.TrimSpace(string(result))
	switch {
	case trimmed == "" || trimmed == "null":
		return items, nil
	case strings.HasPrefix(trimmed, "["):
		if err := json.Unmarshal(result, &items); err != nil {
			return nil, fmt.Errorf("decode completion items: %w", err)
		}
	default:
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(result, &list); err != nil {
			return nil, fmt.Errorf("decode completion list: %w", err)
		}
		if list.Items != nil {
			items = list.Items
		}
	}
	return items, nil
}
