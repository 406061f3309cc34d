package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/go-resty/resty/v2"
)

// StartProcess starts a background process in sandbox id. It runs until it
// exits, is stopped, or reaches req.MaxRuntimeSeconds.
func (c *Client) StartProcess(ctx context.Context, id string, req api.ProcessStartRequest) (*api.ProcessStarted, error) {
	var res api.ProcessStarted
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/processes", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// Processes lists the background processes of sandbox id, running and ended.
func (c *Client) Processes(ctx context.Context, id string) (*api.ProcessList, error) {
	var res api.ProcessList
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/processes", nil, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// ProcessOutput returns the output of process pid from byte offset since on;
// pass the previous answer's NextOffset to read only what is new.
func (c *Client) ProcessOutput(ctx context.Context, id, pid string, since int64) (*api.ProcessOutput, error) {
	var res api.ProcessOutput
	err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/processes/{pid}/output", nil, &res, func(r *resty.Request) {
		withParams(id, "pid", pid)(r)
		r.SetQueryParam("since_offset", strconv.FormatInt(since, 10))
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// StreamProcess follows the output of process pid from byte offset since on,
// calling fn for each output event as the output happens, and returns the
// exit event once the process has ended. If fn returns an error the stream
// is abandoned and that error is returned. It runs as long as the process
// does, so bound it with ctx.
func (c *Client) StreamProcess(ctx context.Context, id, pid string, since int64, fn func(api.ProcessEvent) error) (*api.ProcessEvent, error) {
	const route = "/v1/sandboxes/{id}/processes/{pid}/stream"
	resp, err := c.request(ctx).
		SetDoNotParseResponse(true).
		SetHeader("Accept", "text/event-stream").
		SetPathParams(map[string]string{"id": id, "pid": pid}).
		SetQueryParam("since_offset", strconv.FormatInt(since, 10)).
		Get(route)
	if err != nil {
		return nil, c.transportError(ctx, http.MethodGet, route, err)
	}
	body := resp.RawBody()
	defer body.Close()
	if err := c.checkStream(resp.RawResponse, "text/event-stream"); err != nil {
		return nil, err
	}
	exit, err := readProcessEvents(body, fn)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("stream process %s: %w", pid, ctx.Err())
	}
	if err != nil && isCut(err) {
		return nil, c.cut(http.MethodGet+" "+route, err)
	}
	return exit, err
}

// readProcessEvents reads server-sent events until the exit event, or an
// error event, whose error it returns (an *api.Error). Lines are
// read with bufio.Reader, which has no length limit: one output event may
// carry a large chunk.
func readProcessEvents(r io.Reader, fn func(api.ProcessEvent) error) (*api.ProcessEvent, error) {
	br := bufio.NewReader(r)
	var name string
	var data bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errStreamEnded
			}
			if isCut(err) {
				return nil, err // the caller makes it a *CutError
			}
			return nil, fmt.Errorf("read process stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data.Len() == 0 {
				name = ""
				continue
			}
			var ev api.ProcessEvent
			if err := json.Unmarshal(data.Bytes(), &ev); err != nil {
				return nil, fmt.Errorf("decode process event: %w", err)
			}
			if ev.Type == "" {
				ev.Type = name
			}
			name = ""
			data.Reset()
			switch ev.Type {
			case api.ProcessEventExit:
				return &ev, nil
			case api.ProcessEventOutput:
				if err := fn(ev); err != nil {
					return nil, err
				}
			case api.ProcessEventError:
				if ev.Error == nil {
					return nil, errors.New("process stream ended with an error event without its error")
				}
				if ev.Error.Status == 0 {
					ev.Error.Status = api.StatusOf(ev.Error.Code)
				}
				return nil, ev.Error
			}
			// Unknown event types are skipped: newer servers may add some.
		case strings.HasPrefix(line, ":"):
			// A comment: the server's keep-alive.
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				name = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
		}
	}
}

// ProcessInput writes data to the stdin of process pid.
func (c *Client) ProcessInput(ctx context.Context, id, pid, data string) (*api.ProcessInputResult, error) {
	var res api.ProcessInputResult
	body := api.ProcessInputRequest{Data: data}
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/processes/{pid}/input", body, &res, withParams(id, "pid", pid)); err != nil {
		return nil, err
	}
	return &res, nil
}

// StopProcess stops process pid (SIGTERM, then SIGKILL after a grace period).
func (c *Client) StopProcess(ctx context.Context, id, pid string) (*api.ProcessStopResult, error) {
	var res api.ProcessStopResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/processes/{pid}/stop", nil, &res, withParams(id, "pid", pid)); err != nil {
		return nil, err
	}
	return &res, nil
}

// KillAllProcesses stops every running background process of sandbox id.
func (c *Client) KillAllProcesses(ctx context.Context, id string) (*api.KillAllResult, error) {
	var res api.KillAllResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/processes/kill-all", nil, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// InterpreterExec runs Python code in the persistent interpreter of sandbox
// id; variables and imports survive between calls.
func (c *Client) InterpreterExec(ctx context.Context, id string, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	return c.interpreterExec(ctx, "interpreter", id, req)
}

// InterpreterReset discards the interpreter's state in sandbox id.
func (c *Client) InterpreterReset(ctx context.Context, id string) (*api.InterpreterReset, error) {
	return c.interpreterReset(ctx, "interpreter", id)
}

// InterpreterStatus reports whether the interpreter of sandbox id runs.
func (c *Client) InterpreterStatus(ctx context.Context, id string) (*api.InterpreterStatus, error) {
	return c.interpreterStatus(ctx, "interpreter", id)
}

// interpreterExec runs code in the persistent interpreter that route
// (interpreter for Python, node-interpreter for Node.js) names, waiting the
// request's timeout, clamped as the server clamps it, plus a margin.
func (c *Client) interpreterExec(ctx context.Context, route, id string, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	secs := req.Timeout
	switch {
	case secs <= 0:
		secs = api.DefaultInterpreterTimeout
	case secs > api.MaxInterpreterTimeout:
		secs = api.MaxInterpreterTimeout
	}
	ctx, cancel := withDefaultTimeout(ctx, time.Duration(secs)*time.Second+execMargin)
	defer cancel()
	var res api.InterpreterExecResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/"+route+"/exec", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *Client) interpreterReset(ctx context.Context, route, id string) (*api.InterpreterReset, error) {
	var res api.InterpreterReset
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/"+route+"/reset", nil, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *Client) interpreterStatus(ctx context.Context, route, id string) (*api.InterpreterStatus, error) {
	var res api.InterpreterStatus
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/"+route+"/status", nil, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// LSPStart starts a language server for req.Language in sandbox id.
func (c *Client) LSPStart(ctx context.Context, id string, req api.LSPStartRequest) (*api.LSPStarted, error) {
	var res api.LSPStarted
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/lsp/start", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// LSPOpen tells language server lspID the full text of a document.
func (c *Client) LSPOpen(ctx context.Context, id, lspID string, req api.LSPOpenRequest) error {
	return c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/lsp/{lsp_id}/open", req, nil, withParams(id, "lsp_id", lspID))
}

// LSPCompletion asks language server lspID for completions at a position.
func (c *Client) LSPCompletion(ctx context.Context, id, lspID string, req api.LSPCompletionRequest) (*api.LSPCompletionResult, error) {
	var res api.LSPCompletionResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/lsp/{lsp_id}/completion", req, &res, withParams(id, "lsp_id", lspID)); err != nil {
		return nil, err
	}
	return &res, nil
}

// LSPStop stops language server lspID.
func (c *Client) LSPStop(ctx context.Context, id, lspID string) error {
	return c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/lsp/{lsp_id}/stop", nil, nil, withParams(id, "lsp_id", lspID))
}
