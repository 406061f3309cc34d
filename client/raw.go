package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// RawResponse is a 2xx answer to Do. The caller closes Body.
type RawResponse struct {
	Status int
	Header http.Header
	Body   io.ReadCloser
}

// Do sends one request to pathAndQuery, a path below BaseURL with an
// optional query ("/v1/sandboxes?active_only=true"), with the client's
// credentials, and returns the answer unread: it is what `boxkite api`
// is built on, for routes this package does not wrap yet. header adds to
// (or replaces) the client's headers; body may be nil. As with every
// other method, a non-2xx answer is an *api.Error (for one whose body is
// not boxkite's envelope, a *RawError holding it) and an unreachable server a
// *ConnError.
//
// pathAndQuery must be a path: a full URL is refused, so the API key is
// never sent anywhere but BaseURL.
func (c *Client) Do(ctx context.Context, method, pathAndQuery string, header http.Header, body io.Reader) (*RawResponse, error) {
	u, err := url.Parse(pathAndQuery)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(pathAndQuery, "/") {
		return nil, fmt.Errorf("%s %s: not a path below the server's URL (it must start with /)", method, pathAndQuery)
	}
	if body != nil {
		body = struct{ io.Reader }{body} // the caller's to close, not net/http's
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+pathAndQuery, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u.Path, err)
	}
	req.Header.Set("User-Agent", c.userAgent())
	req.Header.Set("Accept", "application/json")
	for k, vs := range header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.APIKey != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	// No redirects: a Location elsewhere would carry the key along.
	hc := *c.resty().GetClient()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, method, u.Path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		err := c.errorFrom(resp.StatusCode, resp.Header, b)
		if e, ok := errors.AsType[*api.Error](err); ok && parseEnvelope(b) == nil && len(bytes.TrimSpace(b)) > 0 {
			return nil, &RawError{Err: e, Header: resp.Header, Body: b}
		}
		return nil, err
	}
	return &RawResponse{Status: resp.StatusCode, Header: resp.Header, Body: resp.Body}, nil
}

// RawError is Do's error for a non-2xx answer whose body is not
// boxkite's error envelope (CodeBadResponse: a proxy's error page,
// another web server; or JSON of another API, such as a gateway's
// {"message":"Forbidden"}): the
// *api.Error it unwraps to, and the answer's headers and body (at most
// 1 MiB), which Do's caller may show as they are (`boxkite api` prints
// them, as gh api does).
type RawError struct {
	Err    *api.Error
	Header http.Header
	Body   []byte
}

func (e *RawError) Error() string { return e.Err.Error() }
func (e *RawError) Unwrap() error { return e.Err }
