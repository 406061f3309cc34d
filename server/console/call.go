package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// call makes one request of the console's own (sign-in, key minting,
// sign-out) to the API, in process, as from the browser's address r came
// from, and decodes a 2xx answer into out. An API refusal comes back as
// its *api.Error, to be passed on to the browser as it is.
func (c *Console) call(ctx context.Context, from *http.Request, method, path, auth string, body, out any) error {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return fmt.Errorf("build %s %s: %w", method, path, err)
	}
	req.RemoteAddr, req.Host = from.RemoteAddr, from.Host
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := &recorder{header: http.Header{}}
	c.cfg.API.ServeHTTP(rec, req)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if status >= 300 {
		var env api.ErrorEnvelope
		if err := json.Unmarshal(rec.body.Bytes(), &env); err != nil || env.Error == nil {
			return fmt.Errorf("%s %s: status %d without an error envelope", method, path, status)
		}
		env.Error.Status = status
		return env.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

// recorder is the response writer of call: the API's answers to the
// console's own requests are small JSON bodies.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body.Len()+len(p) > maxCallAnswer {
		return 0, errAnswerTooLarge
	}
	return r.body.Write(p)
}

// maxCallAnswer bounds an answer to one of the console's own calls.
const maxCallAnswer = 4 << 20

var errAnswerTooLarge = errors.New("the API's answer is larger than the console reads")
