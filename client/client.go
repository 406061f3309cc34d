package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/ctxsleep"
	"github.com/go-resty/resty/v2"
)

// requestTimeout bounds a call whose context has no deadline, so a hung
// server cannot hang a caller forever. Exec calls use the command's own
// timeout plus execMargin instead: nothing here may cut a long command short.
const (
	requestTimeout = 2 * time.Minute
	execMargin     = 30 * time.Second
)

// A Client calls one boxkite control plane. The zero value is not usable: set
// BaseURL (and APIKey) first. Set the fields before the first call and don't
// change them afterwards; a Client is then safe for concurrent use.
type Client struct {
	BaseURL    string       // e.g. http://127.0.0.1:8090 or https://boxkite.example.com
	APIKey     string       // bxk_live_…; sent as "Authorization: Bearer <APIKey>"
	HTTPClient *http.Client // nil means a client with Go's default transport
	UserAgent  string       // empty means "boxkite-go-client"
	// MaxRetries is how often a JSON call refused for now (429
	// rate_limited, a 503 the server gets over: see retryable) is sent
	// again, after Retry-After (else an exponential backoff). 0, the
	// default, retries none: the CLI reports a 429 at once.
	MaxRetries int
	// MaxRetryWait caps one wait before a retry; 0 means 60 s.
	MaxRetryWait time.Duration
	// BadResponseHint is the hint of a CodeBadResponse error, for a
	// program that names its own setting of the base URL (a flag, an
	// environment variable); empty means the package's BadResponseHint,
	// which names BaseURL.
	BadResponseHint string

	once sync.Once
	rc   *resty.Client
}

// New returns a Client for baseURL authenticating with apiKey.
func New(baseURL, apiKey string) *Client {
	return &Client{BaseURL: baseURL, APIKey: apiKey}
}

// ConnError is returned when the control plane cannot be reached at all: the
// connection was refused, the host is unknown, or the dial timed out. It
// unwraps to the network error, so errors.Is(err, syscall.ECONNREFUSED) works.
type ConnError struct {
	URL string // the base URL that was dialled
	Err error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("cannot reach the boxkite server at %s: %v", e.URL, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// Hint says what to do: what an agent reads below the error (the MCP
// tools); the CLI words its own, naming the flag or file the URL came from.
func (e *ConnError) Hint() string {
	return "is the boxkite server running? Start a local one with `boxkite up`, or check the URL (BOXKITE_BASE_URL, or the CLI's config)"
}

// CutError is returned when a connection to the control plane broke after
// it was made: the server stopped or restarted (a kill -9, a crash, a
// deploy), or something in between dropped it, before the whole answer
// arrived. Whether the request took effect is not known: an upload that
// was cut leaves no file, but a command that was cut may have run in part.
// It unwraps to the transport's error.
type CutError struct {
	URL string // the base URL
	Op  string // the request, "POST /v1/sandboxes/{id}/exec"
	Err error
}

func (e *CutError) Error() string {
	return fmt.Sprintf("%s: the connection to the boxkite server at %s was cut: %v", e.Op, e.URL, e.Err)
}

func (e *CutError) Unwrap() error { return e.Err }

// Hint says what to do: the same words for the CLI and the MCP tools.
func (e *CutError) Hint() string {
	return "the server stopped, restarted or dropped the connection before it answered: check it with `boxkite status` (or its log) and run this again; an exec that was cut may have run in part"
}

// errStreamEnded is a streamed answer that ended cleanly but early: the
// server closed it without its last event.
var errStreamEnded = errors.New("the stream ended without its last event")

// isCut reports whether err is a connection that broke after it was made:
// closed before or during the answer (EOF, a torn chunk), reset, or
// written to after it closed.
func isCut(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errStreamEnded) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// cut is the *CutError of op, without net/http's *url.Error layer, whose
// "Put \"http://…\"" repeats the URL and the request.
func (c *Client) cut(op string, err error) *CutError {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &CutError{URL: c.BaseURL, Op: op, Err: err}
}

// cutReader is the body of a streamed answer: a read that fails because
// the connection broke is a *CutError. A clean io.EOF is the body's end.
type cutReader struct {
	io.ReadCloser
	c  *Client
	op string
}

func (r *cutReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil && err != io.EOF && isCut(err) {
		return n, r.c.cut(r.op, err)
	}
	return n, err
}

type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}

func (c *Client) resty() *resty.Client {
	c.once.Do(func() {
		// resty mutates the http.Client it is given (it fills in Transport),
		// so hand it a copy: the caller's client, or http.DefaultClient, stays untouched.
		hc := &http.Client{}
		if c.HTTPClient != nil {
			cp := *c.HTTPClient
			hc = &cp
		}
		next := hc.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		hc.Transport = versionCheck{next: next}
		c.rc = resty.NewWithClient(hc).
			SetBaseURL(strings.TrimRight(c.BaseURL, "/")).
			SetHeader("User-Agent", c.userAgent()).
			SetHeader("Accept", "application/json").
			// Local mode is plain HTTP on loopback; resty would otherwise print
			// a warning about bearer tokens over HTTP to our users' stderr.
			SetDisableWarn(true).
			SetLogger(quietLogger{})
		if c.APIKey != "" {
			c.rc.SetAuthToken(c.APIKey)
		}
	})
	return c.rc
}

func (c *Client) userAgent() string {
	if c.UserAgent == "" {
		return "boxkite-go-client"
	}
	return c.UserAgent
}

// request starts a request bound to ctx.
func (c *Client) request(ctx context.Context) *resty.Request {
	return c.resty().R().SetContext(ctx)
}

// withDefaultTimeout applies requestTimeout when ctx has no deadline.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// do sends the request and decodes a 2xx JSON body into out (when non-nil).
// Transport failures become *ConnError or a wrapped error, non-2xx become *api.Error.
func (c *Client) do(ctx context.Context, method, path string, body, out any, configure func(*resty.Request)) error {
	_, err := c.doHeader(ctx, method, path, body, out, configure)
	return err
}

// doHeader is do that also returns the headers of the answer it decoded.
func (c *Client) doHeader(ctx context.Context, method, path string, body, out any, configure func(*resty.Request)) (http.Header, error) {
	ctx, cancel := withDefaultTimeout(ctx, requestTimeout)
	defer cancel()
	r := c.request(ctx)
	if body != nil {
		r.SetHeader("Content-Type", "application/json").SetBody(body)
	}
	if key, ok := ctx.Value(idempotencyKey{}).(string); ok && key != "" && method == http.MethodPost {
		r.SetHeader(api.HeaderIdempotencyKey, key)
	}
	if configure != nil {
		configure(r)
	}
	var resp *resty.Response
	for attempt := 0; ; attempt++ {
		var err error
		resp, err = r.Execute(method, path)
		if err != nil {
			return nil, c.transportError(ctx, method, path, err)
		}
		err = c.errorFrom(resp.StatusCode(), resp.Header(), resp.Body())
		if err == nil {
			break
		}
		if e, ok := err.(*api.Error); !ok || attempt >= c.MaxRetries || !retryable(e, resp.Header()) || !replayable(r) {
			return nil, err
		}
		if serr := ctxsleep.Sleep(ctx, c.retryWait(attempt, resp.Header())); serr != nil {
			return nil, err
		}
	}
	if htmlPage(resp.Header()) {
		// A web page where JSON belongs (a static site or a login page
		// at the base URL answers 200 to everything): not boxkite.
		return nil, c.badResponse(resp.StatusCode(), resp.Header())
	}
	if out == nil || len(resp.Body()) == 0 {
		return resp.Header(), nil
	}
	if err := json.Unmarshal(resp.Body(), out); err != nil {
		if notBoxkite(resp.Header(), resp.Body()) {
			return nil, c.badResponse(resp.StatusCode(), resp.Header())
		}
		return nil, fmt.Errorf("decode %s %s response: %w", method, path, err)
	}
	return resp.Header(), nil
}

// htmlPage reports whether an answer is a web page, which no JSON route
// of boxkite answers.
func htmlPage(header http.Header) bool {
	media, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	return media == "text/html" || media == "application/xhtml+xml"
}

// transportError classifies an error from the HTTP round trip.
func (c *Client) transportError(ctx context.Context, method, path string, err error) error {
	if e, ok := errors.AsType[*api.Error](err); ok {
		return e // the server is too old (versionCheck)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("%s %s: %w", method, path, ctxErr)
	}
	if isDialError(err) {
		// Drop the *url.Error layer: its "Get \"http://…/v1/…\"" prefix
		// repeats the URL that ConnError already names.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &ConnError{URL: c.BaseURL, Err: err}
	}
	if isCut(err) {
		return c.cut(method+" "+path, err)
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}

// isDialError reports whether err happened before a connection existed, which
// is what "the server is not there" looks like (refused, no such host, dial timeout).
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// errorFrom returns nil for a 2xx status and an *api.Error otherwise: the
// server's envelope when the body is one, a synthesized error when it is not
// (an empty body), so callers never see a raw body. A body that is neither
// the envelope nor JSON (a proxy's HTML page, another web server) is
// CodeBadResponse: the server at BaseURL is not boxkite.
func (c *Client) errorFrom(status int, header http.Header, body []byte) error {
	if status >= 200 && status < 300 {
		return nil
	}
	e := parseEnvelope(body)
	switch {
	case e != nil:
	case notBoxkite(header, body):
		e = c.badResponse(status, header)
	default:
		e = &api.Error{
			Code:    codeForStatus(status),
			Message: fmt.Sprintf("unexpected response from the server: %d %s", status, http.StatusText(status)),
		}
	}
	e.Status = status
	if e.RequestID == "" {
		e.RequestID = header.Get("X-Request-ID")
	}
	return e
}

// notBoxkite reports whether an answer's body is something other than
// JSON: not boxkite, whose every answer with a body is JSON.
func notBoxkite(header http.Header, body []byte) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return false
	}
	media, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	return media != "application/json" && !strings.HasSuffix(media, "+json")
}

// badResponse is the error of an answer that is not boxkite's: its status
// and content type, never its body (a proxy's page says nothing useful
// and may be long).
func (c *Client) badResponse(status int, header http.Header) *api.Error {
	ctype := "without a Content-Type"
	if media, _, err := mime.ParseMediaType(header.Get("Content-Type")); err == nil {
		ctype = media
	} else if v := header.Get("Content-Type"); v != "" {
		ctype = v
	}
	hint := c.BadResponseHint
	if hint == "" {
		hint = BadResponseHint
	}
	return &api.Error{
		Status:  status,
		Code:    CodeBadResponse,
		Message: fmt.Sprintf("the server at %s answered %d %s, not boxkite's JSON", c.BaseURL, status, ctype),
		Hint:    hint,
	}
}

// CodeBadResponse is the code of the error a call returns when the answer
// is not boxkite's: a non-2xx answer whose body is not JSON (a proxy's
// HTML error page, another web server at the base URL), or a 2xx web page
// or other non-JSON body where JSON belongs (a static site answering 200
// to every path). The client's own,
// never the server's; the error keeps the HTTP status.
const CodeBadResponse = "bad_response"

// BadResponseHint is the hint of a CodeBadResponse error.
const BadResponseHint = "check the base URL (BOXKITE_BASE_URL / Client.BaseURL) and any proxy in between"

func parseEnvelope(body []byte) *api.Error {
	var env api.ErrorEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error != nil && (env.Error.Code != "" || env.Error.Message != "") {
		return env.Error
	}
	// The reference server wrapped its 429s in {"detail": {...}}; accept that
	// too so a client pointed at it still reports the real code.
	var detail struct {
		Detail api.ErrorEnvelope `json:"detail"`
	}
	if json.Unmarshal(body, &detail) == nil && detail.Detail.Error != nil && detail.Detail.Error.Code != "" {
		return detail.Detail.Error
	}
	return nil
}

// codeForStatus picks the error code a status implies when the body carried none.
func codeForStatus(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return api.CodeUnauthorized
	case status == http.StatusForbidden:
		return api.CodeForbidden
	case status == http.StatusNotFound:
		return api.CodeNotFound
	case status == http.StatusConflict:
		return api.CodeConflict
	case status == http.StatusUnprocessableEntity:
		return api.CodeValidation
	case status == http.StatusTooManyRequests:
		return api.CodeRateLimited
	case status == http.StatusServiceUnavailable:
		return api.CodeServiceUnavailable
	case status >= 500:
		return api.CodeInternal
	}
	return api.CodeBadRequest
}
