package client

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/go-resty/resty/v2"
)

// watchMargin is added to a watch's own timeout: the server answers only
// when it is over, so the round trip needs a little more.
const watchMargin = 30 * time.Second

// WriteFile creates or overwrites a text file in sandbox id (POST …/files),
// creating parent directories. Use UploadFile for binary or large files.
func (c *Client) WriteFile(ctx context.Context, id string, req api.FileCreateRequest) (*api.FileCreateResult, error) {
	var res api.FileCreateResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// View reads a text file (or lists a directory) in sandbox id, the lines in
// req.ViewRange only when it is set. Output is capped at api.MaxViewOutput.
func (c *Client) View(ctx context.Context, id string, req api.ViewRequest) (*api.ViewResult, error) {
	var res api.ViewResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/view", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// StrReplace replaces req.OldStr with req.NewStr in a file of sandbox id.
// Finding no occurrence is a result (Replaced false), not an error.
func (c *Client) StrReplace(ctx context.Context, id string, req api.StrReplaceRequest) (*api.StrReplaceResult, error) {
	var res api.StrReplaceResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/str-replace", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// Ls lists a directory of sandbox id; for a file it returns that file's
// entry, for a missing path no entries.
func (c *Client) Ls(ctx context.Context, id string, req api.LsRequest) (*api.LsResult, error) {
	var res api.LsResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/ls", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// Glob finds files matching req.Pattern under req.Path in sandbox id.
func (c *Client) Glob(ctx context.Context, id string, req api.GlobRequest) (*api.GlobResult, error) {
	var res api.GlobResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/glob", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// Grep searches file contents in sandbox id for the RE2 expression
// req.Pattern. An invalid pattern comes back in the result's Error field.
func (c *Client) Grep(ctx context.Context, id string, req api.GrepRequest) (*api.GrepResult, error) {
	var res api.GrepResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/grep", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// Watch waits up to req.TimeoutSeconds for changes in a directory of
// sandbox id and returns the first batch.
func (c *Client) Watch(ctx context.Context, id string, req api.WatchRequest) (*api.WatchResult, error) {
	wait := time.Duration(api.MaxWatchSeconds * float64(time.Second))
	ctx, cancel := withDefaultTimeout(ctx, wait+watchMargin)
	defer cancel()
	var res api.WatchResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/watch", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// PresentFiles copies files of sandbox id into its outputs directory, where
// the user can collect them.
func (c *Client) PresentFiles(ctx context.Context, id string, req api.PresentFilesRequest) (*api.PresentFilesResult, error) {
	var res api.PresentFilesResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/files/present", req, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}

// withParams sets the sandbox id and further path parameters, given as
// name, value pairs.
func withParams(id string, kv ...string) func(*resty.Request) {
	return func(r *resty.Request) {
		r.SetPathParam("id", id)
		for i := 0; i+1 < len(kv); i += 2 {
			r.SetPathParam(kv[i], kv[i+1])
		}
	}
}
