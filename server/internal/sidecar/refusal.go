package sidecar

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

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

// Outdated is the answer to a call the sandbox's sidecar refused with its
// own "no route" 404 while stating an older protocol than the server's
// (api.HeaderSidecarProtocol): the route is newer than the sidecar (one
// started before the server was upgraded), which a plain "no route" would
// not tell the client. Any other answer is nil, and resp is left to be
// passed on as it came (what was read of its body is put back).
func Outdated(resp *http.Response, method, path, sandboxID string) *api.Error {
	if resp.StatusCode != http.StatusNotFound || resp.Body == nil || api.SidecarProtocolOf(resp.Header) >= api.SidecarProtocol {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	var env api.ErrorEnvelope
	if err != nil || json.Unmarshal(b, &env) != nil || env.Error == nil ||
		env.Error.Code != api.CodeNotFound || !strings.HasPrefix(env.Error.Message, "no route ") {
		return nil
	}
	resp.Body.Close()
	return OutdatedError(sandboxID, method+" "+path)
}

// OutdatedError says that what sandbox id was asked (what) needs a newer
// sidecar than the one it runs.
func OutdatedError(id, what string) *api.Error {
	return api.Errorf(http.StatusUnprocessableEntity, api.CodeNotSupported,
		"sandbox %s runs a sidecar older than this server, which does not serve %s", id, what).
		WithHint("the sandbox started before the server was upgraded; `boxkite session fork " + id + "` gives a new sandbox with its files that does")
}
