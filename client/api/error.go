package api

import (
	"fmt"
	"net/http"
)

// Error codes. They are stable: clients branch on them, never on messages.
const (
	CodeBadRequest         = "bad_request"
	CodeValidation         = "validation_error"
	CodeUnauthorized       = "unauthorized"    // missing or malformed credentials
	CodeInvalidAPIKey      = "invalid_api_key" // a key that is unknown or revoked
	CodeForbidden          = "forbidden"       // authenticated but not allowed
	CodeNotFound           = "not_found"       // missing, or another account's
	CodeConflict           = "conflict"        // e.g. the sandbox is not active
	CodeLimitExceeded      = "limit_exceeded"  // a fair-use or size limit
	CodeRateLimited        = "rate_limited"    // too many requests; see Retry-After
	CodeSandboxFailed      = "sandbox_operation_failed"
	CodeSidecarAuth        = "sidecar_auth"           // the sidecar refused the token
	CodeSidecarNotReady    = "sidecar_not_configured" // the sidecar has no token
	CodeInternal           = "internal_error"
	CodeServiceUnavailable = "service_unavailable"
	CodeNotSupported       = "not_supported" // a field or feature this server does not implement yet

	// CodeInsufficientStorage (507): the host, a sandbox disk or a volume
	// is full (or below the server's free-space watermark), so a write or a
	// create was refused rather than acknowledged and lost. Details, when
	// the server knows them: {free_bytes, watermark_bytes}.
	CodeInsufficientStorage = "insufficient_storage"
	// CodeSandboxLost (410): the sandbox's sidecar died or its substrate
	// went away while the server ran; the sandbox is recorded as lost and
	// takes no more calls.
	CodeSandboxLost = "sandbox_lost"
	// CodeHostCapacity (503): the host is near one of its own limits
	// (threads/PIDs, loop devices, memory), so a create was refused before
	// the host could no longer fork; sandboxes already running keep
	// answering. Details: {resource, used, limit}.
	CodeHostCapacity = "host_capacity"
	// CodeAuditUnavailable (503): the audit store cannot commit entries, so
	// the server refuses audited work until it can (it fails closed).
	CodeAuditUnavailable = "audit_unavailable"

	// Why an image build failed (Image.FailureCode, never an HTTP answer):
	// a step failed (CodeImageBuildFailed), or the build's jail refused
	// what a package tried: a connection to a host that is not one of the
	// server's package sources (CodeImageBuildEgressRefused), or a write
	// outside the image's directories (CodeImageBuildWriteRefused).
	CodeImageBuildFailed        = "image_build_failed"
	CodeImageBuildEgressRefused = "image_build_egress_refused"
	CodeImageBuildWriteRefused  = "image_build_write_refused"
)

// Error is the body of every non-2xx response, inside an ErrorEnvelope, and
// the Go error the client returns for one.
type Error struct {
	Status    int    `json:"-"`                    // HTTP status; filled by the client
	Code      string `json:"code"`                 // stable, see the Code constants
	Message   string `json:"message"`              // a lower-case sentence for people
	Hint      string `json:"hint,omitempty"`       // what the user can do next
	Details   any    `json:"details,omitempty"`    // structured extras, code-specific
	RequestID string `json:"request_id,omitempty"` // matches the X-Request-ID header
}

// ErrorEnvelope is the JSON shape of an error response: {"error": {...}}.
type ErrorEnvelope struct {
	Error *Error `json:"error"`
}

func (e *Error) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return fmt.Sprintf("%s [%s]", e.Message, e.Code)
}

// Errorf returns an *Error with the given status and code and a formatted message.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithHint returns a copy of e carrying hint.
func (e *Error) WithHint(hint string) *Error {
	c := *e
	c.Hint = hint
	return &c
}

// StatusOf returns the HTTP status an error code is sent with, for codes that
// have one fixed status; other codes return 500.
func StatusOf(code string) int {
	switch code {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeValidation, CodeNotSupported:
		return http.StatusUnprocessableEntity
	case CodeUnauthorized, CodeInvalidAPIKey, CodeSidecarAuth:
		return http.StatusUnauthorized
	case CodeForbidden, CodePermissionDenied:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict:
		return http.StatusConflict
	case CodeLimitExceeded, CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeSandboxFailed:
		return http.StatusBadGateway
	case CodeSidecarNotReady, CodeServiceUnavailable, CodeHostCapacity, CodeAuditUnavailable:
		return http.StatusServiceUnavailable
	case CodeInsufficientStorage:
		return http.StatusInsufficientStorage
	case CodeSandboxLost:
		return http.StatusGone
	}
	return http.StatusInternalServerError
}
