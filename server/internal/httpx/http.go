package httpx

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
)

// ResponseRecorder remembers the status for the request log and whether
// the response has started, so a late error is logged instead of written
// into the middle of a body.
type ResponseRecorder struct {
	http.ResponseWriter
	Status int
	Bytes  int64
}

func (r *ResponseRecorder) WriteHeader(code int) {
	if r.Status == 0 {
		r.Status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *ResponseRecorder) Write(p []byte) (int, error) {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.Bytes += int64(n)
	return n, err
}

// Flush lets streamed exec output through line by line.
func (r *ResponseRecorder) Flush() {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *ResponseRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// WriteJSON sends v with status. Encoding our own types cannot fail, and a
// failed write means the client went away; neither has anyone to tell.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// Request body limits.
const (
	MaxSmallBody = 1 << 20         // create, extend
	MaxExecBody  = api.MaxFileBody // exec carries stdin
)

// DecodeJSON reads a JSON body into v by the rules both APIs share
// (apihttp.DecodeJSON): an empty body leaves v as is, unknown fields are
// ignored so that newer clients work against older servers. A string that
// holds a NUL character is refused, 422 naming the field
// (apihttp.CheckText), unless its field is tagged `nul:"allow"`.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	return apihttp.DecodeText(w, r, v, limit)
}

// CheckText refuses a NUL character in the text of a body v decoded by
// other means than DecodeJSON (apihttp.CheckText): 422 naming the field.
func CheckText(v any) error { return apihttp.CheckText(v) }

// CheckRequestText refuses a query string or headers holding a NUL or
// bytes that are not UTF-8 (apihttp.CheckRequestText): 422 naming the
// parameter. The guard applies it to every route but an OwnText one.
func CheckRequestText(r *http.Request) error { return apihttp.CheckRequestText(r) }

// CheckValues is CheckRequestText for a form body's values (where: "form").
func CheckValues(where string, vs url.Values) error { return apihttp.CheckValues(where, vs) }

// FieldError is one entry of a validation error's details.
type FieldError = api.FieldError

// Invalid returns a 422 validation_error about one body field.
func Invalid(field, msg, hint string) *api.Error { return api.Invalid(field, msg, hint) }

// NotSupported returns a 422 for a field this server accepts in the schema
// but cannot act on yet, rather than silently ignoring it.
func NotSupported(field, hint string) *api.Error {
	msg := field + " is not supported by this server yet"
	return &api.Error{
		Status:  http.StatusUnprocessableEntity,
		Code:    api.CodeNotSupported,
		Message: msg,
		Hint:    hint,
		Details: []FieldError{{Loc: []string{"body", field}, Msg: msg, Type: "not_supported"}},
	}
}

// AcceptWebSocket completes the WebSocket handshake of a route whose
// credential is a header a browser cannot send cross-origin, or a ?token=
// or ?api_key= the page must already hold: nothing ambient (no cookie)
// authenticates, so there is no Origin check and a foreign page gains
// nothing. Messages from the client are limited to readLimit bytes. ok is
// false when the handshake failed; Accept answered it.
func AcceptWebSocket(w http.ResponseWriter, r *http.Request, readLimit int64) (c *websocket.Conn, ok bool) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil, false
	}
	c.SetReadLimit(readLimit)
	return c, true
}
