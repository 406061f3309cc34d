package oauth

import (
	"errors"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Error is an OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2): the
// endpoints of this package answer in the protocol's format, which OAuth
// clients parse, not in the API's error envelope.
type Error struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func errInvalidRequest(desc string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Description: desc}
}

func errInvalidGrant(desc string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_grant", Description: desc}
}

var errInvalidClient = &Error{
	Status: http.StatusUnauthorized, Code: "invalid_client",
	Description: "unknown client_id; register the client again (POST /oauth/register)",
}

// checkRequestText refuses, in the protocol's shape (400 invalid_request
// naming it), a query parameter, header or form value that holds a NUL or
// bytes that are not UTF-8 (httpx.CheckRequestText, httpx.CheckValues):
// the protocol's routes are OwnText, so that the guard's API-envelope
// refusal does not answer an OAuth client, and this is their check.
func checkRequestText(r *http.Request) *Error {
	err := httpx.CheckRequestText(r)
	if err == nil && r.PostForm != nil {
		err = httpx.CheckValues("form", r.PostForm)
	}
	if ae, ok := errors.AsType[*api.Error](err); ok {
		return errInvalidRequest(ae.Message)
	}
	return nil
}

// answer ends an OAuth endpoint: an *Error is written as the protocol's
// JSON; any other error goes to the server's error handling (logged, 500).
func answer(w http.ResponseWriter, err error) error {
	var oe *Error
	if errors.As(err, &oe) {
		w.Header().Set("Cache-Control", "no-store")
		httpx.WriteJSON(w, oe.Status, oe)
		return nil
	}
	return err
}
