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
