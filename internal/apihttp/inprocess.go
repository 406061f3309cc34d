package apihttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// InProcessCall is one JSON request to an http.Handler of this process:
// the control plane calling its own API (the web console, the hosted MCP
// endpoint), without a network.
type InProcessCall struct {
	Method, Path string
	Body         any    // sent as JSON; nil sends no body
	Auth         string // the Authorization header; "" sends none
	RemoteAddr   string // the client address the handler sees
	Host         string
	// MaxAnswer bounds the answer's body (0: no bound); the handler's
	// write past it fails with ErrAnswerTooLarge.
	MaxAnswer int
	// Header, when not nil, receives the answer's headers (a list's Link
	// to its next page).
	Header http.Header
}

// ErrAnswerTooLarge is a handler's write past InProcessCall.MaxAnswer.
var ErrAnswerTooLarge = errors.New("the API's answer is larger than its in-process caller reads")

// ServeInProcess serves c with h and returns the answer's status (200
// when the handler set none) and body.
func ServeInProcess(ctx context.Context, h http.Handler, c InProcessCall) (int, []byte, error) {
	var rd io.Reader = http.NoBody
	if c.Body != nil {
		b, err := json.Marshal(c.Body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode %s %s: %w", c.Method, c.Path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, c.Path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("build %s %s: %w", c.Method, c.Path, err)
	}
	req.RemoteAddr, req.Host = c.RemoteAddr, c.Host
	if c.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Auth != "" {
		req.Header.Set("Authorization", c.Auth)
	}
	rec := &inProcessAnswer{header: http.Header{}, max: c.MaxAnswer}
	h.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if c.Header != nil {
		maps.Copy(c.Header, rec.header)
	}
	return rec.status, rec.body.Bytes(), nil
}

// AnswerError is the *api.Error of an error answer's envelope (its
// Status set to status), or nil when body is not one.
func AnswerError(status int, body []byte) *api.Error {
	var env api.ErrorEnvelope
	if json.Unmarshal(body, &env) != nil || env.Error == nil {
		return nil
	}
	env.Error.Status = status
	return env.Error
}

// inProcessAnswer is the http.ResponseWriter of an in-process call.
type inProcessAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
	max    int
}

func (a *inProcessAnswer) Header() http.Header { return a.header }

func (a *inProcessAnswer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}

func (a *inProcessAnswer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	if a.max > 0 && a.body.Len()+len(p) > a.max {
		return 0, ErrAnswerTooLarge
	}
	return a.body.Write(p)
}
