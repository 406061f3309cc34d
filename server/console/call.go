package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/internal/apihttp"
)

// call makes one request of the console's own (sign-in, key minting,
// sign-out) to the API, in process, as from the browser's address r came
// from, and decodes a 2xx answer into out. An API refusal comes back as
// its *api.Error, to be passed on to the browser as it is.
func (c *Console) call(ctx context.Context, from *http.Request, method, path, auth string, body, out any) error {
	status, answer, err := apihttp.ServeInProcess(ctx, c.cfg.API, apihttp.InProcessCall{
		Method: method, Path: path, Body: body, Auth: auth,
		RemoteAddr: from.RemoteAddr, Host: from.Host, MaxAnswer: maxCallAnswer,
	})
	if err != nil {
		return err
	}
	if status >= 300 {
		if e := apihttp.AnswerError(status, answer); e != nil {
			return e
		}
		return fmt.Errorf("%s %s: status %d without an error envelope", method, path, status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

// maxCallAnswer bounds an answer to one of the console's own calls.
const maxCallAnswer = 4 << 20
