package api

import (
	"fmt"
	"time"
)

// Error codes of the secrets broker (/v1/secrets and http-request).
const (
	// CodeSecretNameTaken (409): the account has a secret of that name.
	CodeSecretNameTaken = "secret_name_taken"
	// CodeInvalidAllowedHost (422): an allowed_hosts entry is not a host
	// name (or IP address), or it does not resolve.
	CodeInvalidAllowedHost = "invalid_allowed_host"
	// CodeUnsafeAllowedHost (422): an allowed_hosts entry resolves to a
	// private, loopback, link-local, metadata or otherwise reserved address.
	CodeUnsafeAllowedHost = "unsafe_allowed_host"
	// CodeUnsupportedTrustTier (422): trust_tier is not "testnet".
	CodeUnsupportedTrustTier = "unsupported_trust_tier"
	// CodeSecretLimitReached (429): the account holds MaxSecretsPerAccount
	// secrets; delete one first. Details: {limit}.
	CodeSecretLimitReached = "secret_limit_reached"
	// CodeSecretNotFound (404): a create's secret_names names a secret the
	// account does not have.
	CodeSecretNotFound = "secret_not_found"
	// CodeSecretNotReferenced (404): an http_request uses {{secret:NAME}}
	// for a secret the sandbox was not created with (or that is gone).
	CodeSecretNotReferenced = "secret_not_referenced_by_session"
	// CodeDestinationNotAllowed (403): an http_request's host is not one of
	// the allowed_hosts of the secrets it uses (of any secret the sandbox
	// has, when it uses none), or it resolves to an address the broker
	// never reaches.
	CodeDestinationNotAllowed = "destination_not_allowed"
	// CodeSecretRequiresHTTPS (403): an http_request that uses a secret is
	// not to an https URL on port 443, the only way a secret leaves the
	// server (a request without a secret is not held to it).
	CodeSecretRequiresHTTPS = "secret_requires_https"
	// CodeSecretsUnavailable (503): the server was started without a
	// secrets key (--secrets-key-file), so it keeps no secrets.
	CodeSecretsUnavailable = "secrets_unavailable"
	// CodeUpstreamTimeout (504) and CodeUpstreamFailed (502): the
	// destination of an http_request did not answer in time, or could not
	// be reached.
	CodeUpstreamTimeout = "upstream_timeout"
	CodeUpstreamFailed  = "upstream_failed"
)

// Limits of the secrets broker.
const (
	MaxSecretsPerAccount  = 50
	MaxSecretNameLen      = 200
	MaxSecretValueLen     = 65536
	MaxSecretAllowedHosts = 20
	// TrustTierTestnet is the one trust tier a secret may name.
	TrustTierTestnet = "testnet"
)

// CreateSecretRequest is the body of POST /v1/secrets.
type CreateSecretRequest struct {
	Name         string   `json:"name"`              // 1..200 characters: letters, digits, '_', '-', '.'
	Value        string   `json:"value" nul:"allow"` // 1..65536 bytes; write-only, never shown again
	AllowedHosts []string `json:"allowed_hosts"`
	TrustTier    string   `json:"trust_tier,omitempty"`
}

// UpdateSecretRequest is the body of PUT /v1/secrets/{id}: a new value,
// and, when given, new allowed_hosts.
type UpdateSecretRequest struct {
	Value        string   `json:"value" nul:"allow"`
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
}

// Secret is how the API shows a secret: never its value.
type Secret struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	AllowedHosts []string   `json:"allowed_hosts"`
	TrustTier    *string    `json:"trust_tier"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	LastUsedAt   *time.Time `json:"last_used_at"`
}

// HTTP request broker limits (reference §3.5 /http-request).
const (
	DefaultHTTPRequestTimeout = 15
	MaxHTTPRequestTimeout     = 60
	MaxHTTPRequestURL         = 4096
	MaxHTTPRequestBody        = 10 << 20
	MaxHTTPResponseBody       = 1 << 20
)

// HTTPRequest is the body of POST /v1/sandboxes/{id}/http-request: a
// request the control plane makes on the sandbox's behalf, with each
// {{secret:NAME}} in the URL, a header value or the body replaced by the
// value of the sandbox's secret NAME.
type HTTPRequest struct {
	Method  string            `json:"method,omitempty"` // default GET
	URL     string            `json:"url"`              // absolute http or https URL
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty" nul:"allow"`
	Timeout int               `json:"timeout,omitempty"` // seconds, 1..60; default 15
}

// HTTPResponse is the answer of http-request. Any echo of a secret's value
// in the headers or body is replaced by [REDACTED_SECRET:NAME].
type HTTPResponse struct {
	StatusCode  int               `json:"status_code"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
	Truncated   bool              `json:"truncated"`    // the body was cut at MaxHTTPResponseBody
	SecretsUsed []string          `json:"secrets_used"` // the names substituted, never values
}

// CheckSecretName refuses a name no secret may have (422 validation_error
// on field "name"): a secret's name is what {{secret:NAME}} can spell, 1 to
// MaxSecretNameLen letters, digits, '_', '-' or '.', but "." and "..",
// which no URL path can carry as a segment (browsers, Node's fetch and
// Rust's url crate resolve them, %2E too), so no SDK could read, update or
// remove such a secret by name. The server and the CLI (before it asks
// for the value) both check with it.
func CheckSecretName(name string) error {
	if validSecretName(name) {
		return nil
	}
	return Invalid("name", fmt.Sprintf("name must be 1 to %d letters, digits, '_', '-' or '.', and not . or ..", MaxSecretNameLen),
		"pick a name such as GITHUB_TOKEN; requests refer to it as {{secret:GITHUB_TOKEN}}")
}

func validSecretName(name string) bool {
	if name == "" || len(name) > MaxSecretNameLen || name == "." || name == ".." {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
