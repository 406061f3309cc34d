package sidecar

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// Refusal is the sidecar's own error envelope from a refused call or
// upgrade, when it is a client error worth passing on (4xx), else nil.
func Refusal(resp *http.Response) *api.Error {
	if resp.StatusCode < 400 || resp.StatusCode >= 500 || resp.Body == nil {
		return nil
	}
	var env api.ErrorEnvelope
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&env) != nil || env.Error == nil || env.Error.Code == "" {
		return nil
	}
	env.Error.Status = resp.StatusCode
	return env.Error
}
