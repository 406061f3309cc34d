package model

import (
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"github.com/boxkite/boxkite/client/api"
)

// MaxLabelLen bounds the label of a sandbox, volume, image or MCP
// connection.
const MaxLabelLen = 200

// HostRefusal turns a CapacityDriver's refusal into the API's answer.
func HostRefusal(err error, what string) error {
	if err == nil {
		return nil
	}
	if he, ok := errors.AsType[*HostLimitError](err); ok {
		return he.APIError(what)
	}
	return fmt.Errorf("check host capacity: %w", err)
}

// IsStorageFault reports whether err says the host could not store
// something: a full filesystem, or a sandbox disk that could not grow.
func IsStorageFault(err error) bool {
	return errors.Is(err, ErrInsufficientStorage) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrStoreFull)
}

// StorageFailed is the 507 answer to an operation the host could not store.
func StorageFailed(what string) *api.Error {
	return &api.Error{
		Status: http.StatusInsufficientStorage, Code: api.CodeInsufficientStorage,
		Message: fmt.Sprintf("could not %s: the host's storage is full", what),
		Hint:    "free space on the host (remove sandboxes and volumes you no longer need), then retry",
		Details: map[string]any{"resource": api.HostDiskResource},
	}
}

// SandboxFailed is the safe answer when the driver or a sidecar failed;
// the cause is in the log under the request id.
func SandboxFailed(op string) *api.Error {
	return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "could not %s the sandbox", op).
		WithHint("retry; if it keeps failing, the server log has the cause under this request id")
}

// RefusedValue is the answer to err when the database refused a value of
// the request, else nil: the backstop behind the API's own checks
// (apihttp.CheckText, the handlers' bounds), so that a value one of them
// missed is the client's 422 and not a 500. It reads the SQLSTATE of a
// data exception (class 22) anywhere in err's chain: a NUL byte or bytes
// that are not UTF-8 in text (22021; PostgreSQL's text holds neither,
// SQLite's does), a number or a time outside its column's range (22003,
// 22008), text longer than its column (22001); and text too long for the
// column's index (54000). The message says which kind of value, not which
// field, which only the handler knows; the log has the cause.
func RefusedValue(err error) *api.Error {
	se, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err)
	if !ok {
		return nil
	}
	var what string
	switch se.SQLState() {
	case "22021", "22P05": // character_not_in_repertoire, untranslatable_character
		what = "text with a NUL character (\\u0000) or bytes that are not UTF-8"
	case "22001", "54000": // string_data_right_truncation, program_limit_exceeded (index row size)
		what = "text longer than it can keep"
	case "22003": // numeric_value_out_of_range
		what = "a number out of range"
	case "22008": // datetime_field_overflow
		what = "a time out of range"
	default:
		return nil
	}
	return &api.Error{
		Status: http.StatusUnprocessableEntity, Code: api.CodeValidation,
		Message: "the request has " + what + ", which the database cannot store",
		Hint:    "correct the value and send the request again; the server log names the cause under this request id",
	}
}
