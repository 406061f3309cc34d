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

	// Refusals of a request's shape, the same from the control plane and
	// the sidecar (see docs/errors.md).
	CodeMethodNotAllowed     = "method_not_allowed"     // 405: the path exists for other methods; see the Allow header
	CodeRequestTimeout       = "request_timeout"        // 408: the request body did not arrive in time
	CodePayloadTooLarge      = "payload_too_large"      // 413: the body is over the route's limit
	CodeUnsupportedMediaType = "unsupported_media_type" // 415: a JSON route got another Content-Type
	CodeHeadersTooLarge      = "headers_too_large"      // 431: the request's header block is over the limit
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
	// CodeSandboxPaused (409): the sandbox is paused; resume it first.
	// Details: {paused_with}.
	CodeSandboxPaused = "sandbox_paused"
	// CodeSnapshotLimitReached (429): the account holds its most
	// snapshots; delete one first. Details: {limit, count}.
	CodeSnapshotLimitReached = "snapshot_limit_reached"
	// CodeVolumeLimitReached (429): the account holds its most volumes
	// (DefaultVolumeLimit); delete one first. Details: {limit, count}.
	CodeVolumeLimitReached = "volume_limit_reached"

	// Why an image build failed (Image.FailureCode, never an HTTP answer):
	// a step failed (CodeImageBuildFailed), or the build's jail refused
	// what a package tried: a connection to a host that is not one of the
	// server's package sources (CodeImageBuildEgressRefused), or a write
	// outside the image's directories (CodeImageBuildWriteRefused).
	CodeImageBuildFailed        = "image_build_failed"
	CodeImageBuildEgressRefused = "image_build_egress_refused"
	CodeImageBuildWriteRefused  = "image_build_write_refused"

	// Why an image import failed (Image.FailureCode, never an HTTP answer):
	// the archive is neither an OCI image layout nor a docker save one, or
	// holds what an image may not (CodeImageImportBadArchive); its files
	// come to more than an image may hold (CodeImageImportTooBig); the
	// host's disk filled while they were written (CodeImageImportDiskFull);
	// else the server failed it (CodeImageImportFailed: stopped while it
	// was queued or extracting, or the host's disk failed).
	CodeImageImportBadArchive = "image_import_bad_archive"
	CodeImageImportTooBig     = "image_import_too_big"
	CodeImageImportDiskFull   = "image_import_disk_full"
	CodeImageImportFailed     = "image_import_failed"
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

// FieldError is one entry of a validation error's details, shaped like
// the reference's ({loc, msg, type}).
type FieldError struct {
	Loc  []string `json:"loc"`
	Msg  string   `json:"msg"`
	Type string   `json:"type"`
}

// Invalid returns a 422 validation_error about one field of the request
// body, with the field in Details and hint (or, when empty, one naming the
// field). Both the control plane and the sidecar
// answer bad field values with it.
func Invalid(field, msg, hint string) *Error {
	if hint == "" {
		hint = "correct " + field + " and send the request again; GET /openapi.json describes every field"
	}
	return &Error{
		Status: http.StatusUnprocessableEntity, Code: CodeValidation, Message: msg, Hint: hint,
		Details: []FieldError{{Loc: []string{"body", field}, Msg: msg, Type: "value_error"}},
	}
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
	case CodeConflict, CodeSandboxPaused:
		return http.StatusConflict
	case CodeLimitExceeded, CodeRateLimited, CodeSnapshotLimitReached, CodeVolumeLimitReached:
		return http.StatusTooManyRequests
	case CodeSandboxFailed:
		return http.StatusBadGateway
	case CodeSidecarNotReady, CodeServiceUnavailable, CodeHostCapacity, CodeAuditUnavailable:
		return http.StatusServiceUnavailable
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeRequestTimeout:
		return http.StatusRequestTimeout
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodeHeadersTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case CodeInsufficientStorage:
		return http.StatusInsufficientStorage
	case CodeSandboxLost:
		return http.StatusGone
	}
	return http.StatusInternalServerError
}
