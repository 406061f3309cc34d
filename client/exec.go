package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// execDeadline is how long an exec call may take end to end: the command's
// own timeout plus a margin for the round trip. The server enforces the real
// limit and reports it as exit code 124; this only guards against a server
// that never answers.
func execDeadline(req api.ExecRequest) time.Duration {
	secs := req.Timeout
	if secs <= 0 {
		secs = api.DefaultExecTimeout
	}
	return time.Duration(secs)*time.Second + execMargin
}

// Exec runs req.Command in sandbox id and returns its result once it exits.
// A non-zero exit code is a result, not an error. Each stream keeps at most
// req.MaxOutputBytes (default api.DefaultExecOutput); res.Truncated says
// when more was written and dropped.
func (c *Client) Exec(ctx context.Context, id string, req api.ExecRequest) (*api.ExecResult, error) {
	ctx, cancel := withDefaultTimeout(ctx, execDeadline(req))
	defer cancel()
	var res api.ExecResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/exec", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// ExecStream runs req.Command in sandbox id and calls fn for every stdout and
// stderr event as the output happens, then returns the command's exit code
// (api.ExitCodeTimeout when it timed out). If fn returns an error the stream
// is abandoned and that error is returned. A stream the server ends with an
// error event (the sandbox was lost mid-exec) returns that *api.Error.
func (c *Client) ExecStream(ctx context.Context, id string, req api.ExecRequest, fn func(api.ExecEvent) error) (int, error) {
	res, err := c.ExecStreamResult(ctx, id, req, fn)
	if err != nil {
		return 0, err
	}
	return res.ExitCode, nil
}

// ExecStreamResult is ExecStream returning the whole end of the stream:
// the exit code, the duration and the output counts (Truncated and the
// bytes of each stream); Stdout and Stderr are left empty, fn had them.
func (c *Client) ExecStreamResult(ctx context.Context, id string, req api.ExecRequest, fn func(api.ExecEvent) error) (*api.ExecResult, error) {
	return c.ExecStreamStarted(ctx, id, req, nil, fn)
}

// ExecStreamStarted is ExecStreamResult that tells started, once the
// command runs and before any event, the id that SignalExec sends it
// signals by (api.HeaderExecID); "" when the server or the sandbox's
// sidecar is older than it.
func (c *Client) ExecStreamStarted(ctx context.Context, id string, req api.ExecRequest, started func(execID string), fn func(api.ExecEvent) error) (*api.ExecResult, error) {
	ctx, cancel := withDefaultTimeout(ctx, execDeadline(req))
	defer cancel()
	const path = "/v1/sandboxes/{id}/exec"
	resp, err := c.request(ctx).
		SetHeader("Content-Type", "application/json").
		SetHeader("Accept", api.ContentTypeNDJSON).
		SetBody(req).
		SetPathParam("id", id).
		SetDoNotParseResponse(true).
		Post(path)
	if err != nil {
		return nil, c.transportError(ctx, http.MethodPost, path, err)
	}
	body := resp.RawBody()
	defer body.Close()
	if err := c.checkStream(resp.RawResponse, api.ContentTypeNDJSON, "application/json"); err != nil {
		return nil, err
	}
	if started != nil {
		started(resp.Header().Get(api.HeaderExecID))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header().Get("Content-Type"))
	if mt == "application/json" {
		// A server that does not stream answers with the plain result; replay it as events.
		return replayResult(body, fn)
	}
	res, err := readEvents(body, fn)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("exec: %w", ctx.Err())
	}
	if err != nil && isCut(err) {
		return nil, c.cut(http.MethodPost+" "+path, err)
	}
	return res, err
}

// readEvents decodes NDJSON events until the exit event. json.Decoder has no
// line-length limit, unlike bufio.Scanner's 64 KiB default, and one line may
// carry a large chunk of output.
func readEvents(r io.Reader, fn func(api.ExecEvent) error) (*api.ExecResult, error) {
	dec := json.NewDecoder(r)
	for {
		var ev api.ExecEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errStreamEnded
			}
			if isCut(err) {
				return nil, err // the caller makes it a *CutError
			}
			return nil, fmt.Errorf("exec: read stream: %w", err)
		}
		switch ev.Type {
		case api.EventExit:
			return &api.ExecResult{ExitCode: ev.ExitCode, DurationMS: ev.DurationMS, ExecOutputInfo: ev.ExecOutputInfo}, nil
		case api.EventError:
			if ev.Error != nil {
				if ev.Error.Status == 0 {
					ev.Error.Status = api.StatusOf(ev.Error.Code)
				}
				return nil, ev.Error
			}
			return nil, &api.Error{Code: api.CodeInternal, Message: "exec stream failed"}
		case api.EventStdout, api.EventStderr:
			if err := fn(ev); err != nil {
				return nil, err
			}
		}
		// Unknown event types are skipped: newer servers may add some.
	}
}

// replayResult hands a plain JSON result to fn as events, for a server
// that answered without streaming.
func replayResult(r io.Reader, fn func(api.ExecEvent) error) (*api.ExecResult, error) {
	var res api.ExecResult
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, fmt.Errorf("exec: decode result: %w", err)
	}
	for _, ev := range []api.ExecEvent{{Type: api.EventStdout, Data: res.Stdout}, {Type: api.EventStderr, Data: res.Stderr}} {
		if ev.Data == "" {
			continue
		}
		if err := fn(ev); err != nil {
			return nil, err
		}
	}
	res.Stdout, res.Stderr = "", ""
	return &res, nil
}

// SignalExec sends signal (api.SignalINT, …) to the process group of the
// streamed exec execID (ExecStreamStarted) of sandbox id while it runs;
// the exec's stream then ends as the command does. A command that ended
// is a not_found *api.Error.
func (c *Client) SignalExec(ctx context.Context, id, execID, signal string) (*api.ExecSignalResult, error) {
	var res api.ExecSignalResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/exec/{exec_id}/signal", api.ExecSignalRequest{Signal: signal}, &res, withParams(id, "exec_id", execID)); err != nil {
		return nil, err
	}
	return &res, nil
}
