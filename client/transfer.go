package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Transfers stream: nothing here holds a whole file or archive in memory,
// and no default timeout applies, since a large transfer may rightly take
// long. Bound them with ctx.

// A Download is the body of a file or archive being downloaded. Read it to
// the end and close it; ctx of the call that returned it bounds the reading.
type Download struct {
	io.ReadCloser
	Size int64 // bytes to expect, or -1 when the server did not say (archives)
}

// UploadFile streams r into the file path of sandbox id (PUT …/files/raw),
// creating parent directories and replacing the file whole once the upload
// is complete. It reads r to the end but does not close it.
func (c *Client) UploadFile(ctx context.Context, id, path string, r io.Reader) (*api.FileWriteResult, error) {
	var res api.FileWriteResult
	if err := c.upload(ctx, http.MethodPut, "/v1/sandboxes/{id}/files/raw", id, path, r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// UploadFileSized is UploadFile for a body of a known size: exactly size
// bytes of r are sent, with Content-Length, so a server low on disk can
// refuse the upload (507 insufficient_storage) before a byte of it is
// written. r must hold size bytes; a negative size is UploadFile's
// chunked upload.
func (c *Client) UploadFileSized(ctx context.Context, id, path string, r io.Reader, size int64) (*api.FileWriteResult, error) {
	var res api.FileWriteResult
	if size >= 0 {
		r = &sized{Reader: r, n: size}
	}
	if err := c.upload(ctx, http.MethodPut, "/v1/sandboxes/{id}/files/raw", id, path, r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// sized is a body whose length upload declares. It sends at most n
// bytes, and says so when the reader ends before n (a file that shrank
// while it was read, or a sysfs file, whose size is a page).
type sized struct {
	io.Reader
	n, read int64
}

func (s *sized) Read(p []byte) (int, error) {
	if left := s.n - s.read; int64(len(p)) > left {
		p = p[:left]
	}
	if len(p) == 0 {
		return 0, io.EOF
	}
	n, err := s.Reader.Read(p)
	s.read += int64(n)
	if err == io.EOF && s.read < s.n {
		err = fmt.Errorf("the body ended after %d of its %d bytes: it changed while it was read", s.read, s.n)
	}
	return n, err
}

// DownloadFile streams the file path of sandbox id (GET …/files/raw).
func (c *Client) DownloadFile(ctx context.Context, id, path string) (*Download, error) {
	return c.download(ctx, "/v1/sandboxes/{id}/files/raw", id, url.Values{"path": {path}})
}

// UploadArchive streams a tar or tar.gz archive from r and extracts it under
// the directory dir of sandbox id (POST …/files/archive), creating dir. It
// reads r to the end but does not close it.
func (c *Client) UploadArchive(ctx context.Context, id, dir string, r io.Reader) (*api.ArchiveResult, error) {
	var res api.ArchiveResult
	if err := c.upload(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/archive", id, dir, r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// DownloadArchive streams the directory dir of sandbox id as an
// uncompressed tar with names relative to dir (GET …/files/archive).
// Symlinks come as symlinks.
func (c *Client) DownloadArchive(ctx context.Context, id, dir string) (*Download, error) {
	return c.download(ctx, "/v1/sandboxes/{id}/files/archive", id, url.Values{"path": {dir}})
}

// DownloadArchiveGzip is DownloadArchive compressed: a tar.gz.
func (c *Client) DownloadArchiveGzip(ctx context.Context, id, dir string) (*Download, error) {
	return c.download(ctx, "/v1/sandboxes/{id}/files/archive", id, url.Values{"path": {dir}, "gzip": {"1"}})
}

// upload sends r as the body, unbuffered. It uses net/http directly:
// resty reads an io.Reader body whole to be able to retry it.
func (c *Client) upload(ctx context.Context, method, route, id, path string, r io.Reader, out any) error {
	// Hide any Close method: net/http closes a body that has one, and the
	// caller's reader is the caller's to close. Unless the caller said how
	// long it is (UploadFileSized), the body goes chunked.
	req, err := c.rawRequest(ctx, method, route, id, url.Values{"path": {path}}, struct{ io.Reader }{r})
	if err != nil {
		return err
	}
	if s, ok := r.(*sized); ok {
		req.ContentLength = s.n
		if s.n == 0 {
			req.Body = http.NoBody
		}
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.resty().GetClient().Do(req)
	if err != nil {
		return c.transportError(ctx, method, route, err)
	}
	defer resp.Body.Close()
	if err := c.checkStatus(resp); err != nil {
		return err
	}
	if htmlPage(resp.Header) {
		return c.badResponse(resp.StatusCode, resp.Header)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s response: %w", method, route, err)
	}
	return nil
}

func (c *Client) download(ctx context.Context, route, id string, query url.Values) (*Download, error) {
	req, err := c.rawRequest(ctx, http.MethodGet, route, id, query, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "*/*")
	resp, err := c.resty().GetClient().Do(req)
	if err != nil {
		return nil, c.transportError(ctx, http.MethodGet, route, err)
	}
	if err := c.checkStatus(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if htmlPage(resp.Header) {
		// A static site's page, not the file: boxkite sends files as
		// application/octet-stream, whatever their name.
		resp.Body.Close()
		return nil, c.badResponse(resp.StatusCode, resp.Header)
	}
	return &Download{ReadCloser: &cutReader{ReadCloser: resp.Body, c: c, op: http.MethodGet + " " + route}, Size: resp.ContentLength}, nil
}

// rawRequest builds a transfer request for route (with an {id}
// placeholder) and query, carrying the client's headers.
func (c *Client) rawRequest(ctx context.Context, method, route, id string, query url.Values, body io.Reader) (*http.Request, error) {
	u := strings.TrimRight(c.BaseURL, "/") + strings.Replace(route, "{id}", url.PathEscape(id), 1)
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, route, err)
	}
	req.Header.Set("User-Agent", c.userAgent())
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	return req, nil
}

// checkStatus turns a non-2xx response into an *api.Error, reading at most
// 1 MiB of its body.
func (c *Client) checkStatus(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return c.errorFrom(resp.StatusCode, resp.Header, b)
}

// checkStream is checkStatus for a streaming call: a 2xx answer must also
// be one of the media types the stream comes as. Anything else in its
// place (a static site or login page at the base URL answering 200 to
// every path, a proxy's "200 OK" text) is CodeBadResponse, not a decode
// error from the stream's reader.
func (c *Client) checkStream(resp *http.Response, media ...string) error {
	if err := c.checkStatus(resp); err != nil {
		return err
	}
	got, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if slices.Contains(media, got) {
		return nil
	}
	return c.badResponse(resp.StatusCode, resp.Header)
}
