package client

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// NodeInterpreterExec runs JavaScript in the sandbox's persistent Node.js
// interpreter (POST /v1/sandboxes/{id}/node-interpreter/exec).
func (c *Client) NodeInterpreterExec(ctx context.Context, id string, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	return c.interpreterExec(ctx, "node-interpreter", id, req)
}

// NodeInterpreterReset restarts the Node.js interpreter of sandbox id
// (POST /v1/sandboxes/{id}/node-interpreter/reset).
func (c *Client) NodeInterpreterReset(ctx context.Context, id string) (*api.InterpreterReset, error) {
	return c.interpreterReset(ctx, "node-interpreter", id)
}

// NodeInterpreterStatus reports whether the Node.js interpreter of sandbox
// id runs (GET /v1/sandboxes/{id}/node-interpreter/status).
func (c *Client) NodeInterpreterStatus(ctx context.Context, id string) (*api.InterpreterStatus, error) {
	return c.interpreterStatus(ctx, "node-interpreter", id)
}

// PTYExec runs one command on a terminal of its own with input typed into
// it (POST /v1/sandboxes/{id}/pty-exec).
func (c *Client) PTYExec(ctx context.Context, id string, req api.PTYExecRequest) (*api.PTYExecResult, error) {
	secs := req.TimeoutSeconds
	if secs <= 0 {
		secs = api.DefaultPTYTimeout
	}
	ctx, cancel := withDefaultTimeout(ctx, time.Duration(min(secs, api.MaxPTYTimeout)*float64(time.Second))+execMargin)
	defer cancel()
	var res api.PTYExecResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/pty-exec", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// NodeInterpreterExec runs JavaScript in the persistent Node.js interpreter.
func (s *Sandbox) NodeInterpreterExec(ctx context.Context, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	return s.c.NodeInterpreterExec(ctx, s.id, req)
}

// PTYExec runs one command on a terminal; see Client.PTYExec.
func (s *Sandbox) PTYExec(ctx context.Context, req api.PTYExecRequest) (*api.PTYExecResult, error) {
	return s.c.PTYExec(ctx, s.id, req)
}

// Browser calls POST /v1/sandboxes/{id}/browser/{action} (navigate, exec,
// screenshot or close) with req, decoding the answer into out.
func (c *Client) Browser(ctx context.Context, id, action string, req, out any) error {
	ctx, cancel := withDefaultTimeout(ctx, api.MaxBrowserTimeout*time.Second+execMargin+time.Minute)
	defer cancel()
	return c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/browser/"+action, req, out, withID(id))
}

// Browser drives the sandbox's headless Chromium; see Client.Browser.
func (s *Sandbox) Browser(ctx context.Context, action string, req, out any) error {
	return s.c.Browser(ctx, s.id, action, req, out)
}
