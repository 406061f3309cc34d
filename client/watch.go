package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// watchRetries bounds how many times in a row WatchLog reconnects to a
// stream that broke without delivering anything.
const watchRetries = 5

// WatchLog follows the audit log of sandbox id as it is written (GET
// …/watch, server-sent events), calling fn for each entry in chain order.
// With lastEventID "" it starts with the newest 100 entries; otherwise it
// starts after that entry. A broken stream is resumed after the last entry
// seen, so fn sees every entry once. WatchLog runs until ctx is done (then it
// returns nil), fn returns an error (returned as is), or the server
// refuses the stream (an *api.Error).
func (c *Client) WatchLog(ctx context.Context, id, lastEventID string, fn func(api.LogEntry) error) error {
	failures := 0
	for {
		last, delivered, err := c.watchOnce(ctx, id, lastEventID, fn)
		lastEventID = last
		if ctx.Err() != nil {
			return nil
		}
		if _, ok := errors.AsType[*api.Error](err); ok {
			return err
		}
		if errors.Is(err, errCallback) {
			return errors.Unwrap(err)
		}
		if delivered {
			failures = 0
		}
		if failures++; failures > watchRetries {
			return fmt.Errorf("watch sandbox %s: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(failures) * 500 * time.Millisecond):
		}
	}
}

// errCallback wraps an error returned by WatchLog's fn.
var errCallback = errors.New("watch callback")

// watchOnce reads one stream; it returns the id of the last entry passed
// to fn and whether it passed any.
func (c *Client) watchOnce(ctx context.Context, id, lastEventID string, fn func(api.LogEntry) error) (string, bool, error) {
	const route = "/v1/sandboxes/{id}/watch"
	r := c.request(ctx).
		SetDoNotParseResponse(true).
		SetHeader("Accept", "text/event-stream").
		SetPathParam("id", id)
	if lastEventID != "" {
		r.SetHeader("Last-Event-ID", lastEventID)
	}
	resp, err := r.Get(route)
	if err != nil {
		return lastEventID, false, c.transportError(ctx, http.MethodGet, route, err)
	}
	body := resp.RawBody()
	defer body.Close()
	if err := c.checkStream(resp.RawResponse, "text/event-stream"); err != nil {
		return lastEventID, false, err
	}
	delivered := false
	err = readSSE(body, func(evID, data string) error {
		var e api.LogEntry
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return fmt.Errorf("decode watch event: %w", err)
		}
		if err := fn(e); err != nil {
			return fmt.Errorf("%w: %w", errCallback, err)
		}
		if evID != "" {
			lastEventID = evID
		}
		delivered = true
		return nil
	})
	return lastEventID, delivered, err
}

// readSSE calls fn with the id and data of each event of a server-sent
// event stream until it ends. Comments (keep-alives) are skipped.
func readSSE(r io.Reader, fn func(id, data string) error) error {
	br := bufio.NewReader(r)
	var id string
	var data strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("watch stream ended")
			}
			return fmt.Errorf("read watch stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data.Len() > 0 {
				if err := fn(id, data.String()); err != nil {
					return err
				}
			}
			id = ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
		}
	}
}
