package api

import (
	"strings"
	"time"
)

// Error codes of accounts, credentials, quotas and request deduplication.
const (
	// CodeWrongCredentialType (401): an access token (JWT) was sent to a
	// route that takes an API key, or an API key to one that takes a token.
	CodeWrongCredentialType = "wrong_credential_type"
	// CodeInvalidToken (401): the access token is malformed, forged or expired.
	CodeInvalidToken = "invalid_token"
	// CodeInvalidCredentials (401): login with an unknown email or a wrong
	// password; the two are not told apart.
	CodeInvalidCredentials = "invalid_credentials"
	// CodeEmailTaken (409): signup with an email that has an account.
	CodeEmailTaken = "email_taken"
	// CodeSSHKeyExists (409): the public key is registered already.
	CodeSSHKeyExists = "ssh_key_exists"

	// CodeIdempotencyKeyReuse (422): an Idempotency-Key was used before
	// for a request with another body.
	CodeIdempotencyKeyReuse = "idempotency_key_reuse"
	// CodeIdempotencyKeyInProgress (409): the first request with this
	// Idempotency-Key has not finished yet.
	CodeIdempotencyKeyInProgress = "idempotency_key_in_progress"

	// Fair-use limits of POST /v1/sandboxes (429), checked in this order.
	CodeGlobalCapacityReached      = "global_capacity_reached"          // details {limit, active}
	CodeConcurrentSandboxLimit     = "concurrent_sandbox_limit_reached" // details {limit, active, requested}
	CodeMonthlyUsageLimit          = "monthly_usage_limit_reached"      // details {limit_hours, used_hours}
	CodeSandboxSizeLimitReached    = "sandbox_size_limit_reached"       // details {requested_size, max_size}
	CodeSandboxStorageLimitReached = "sandbox_storage_limit_reached"    // details {requested_storage_gb, max_storage_gb}
)

// Headers of rate limiting and request deduplication.
const (
	HeaderRateLimitLimit     = "X-RateLimit-Limit"     // requests allowed per window
	HeaderRateLimitRemaining = "X-RateLimit-Remaining" // requests left in the window
	HeaderRetryAfter         = "Retry-After"           // seconds, on 429 rate_limited
	HeaderIdempotencyKey     = "Idempotency-Key"       // sent by clients on POST
	HeaderIdempotentReplayed = "Idempotent-Replayed"   // "true" on a replayed answer
	// HeaderServerVersion is on every answer of the control plane: its
	// build version (a release like 0.3.0, or "dev"). The SDKs under sdk/
	// refuse to talk to a release older than the one they were made for.
	HeaderServerVersion = "Boxkite-Version"
)

// Password and API-key name bounds.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 200
	MaxKeyNameLen  = 200
)

// Bounds of CreateAPIKeyRequest.ExpiresInSeconds: a minute to a year.
const (
	MinKeyExpiresInSeconds = 60
	MaxKeyExpiresInSeconds = 365 * 24 * 60 * 60
)

// API key roles, in CreateAPIKeyRequest.Role and APIKey.Role.
const (
	RoleAdmin  = "admin"  // everything, including key management and takeover
	RoleMember = "member" // sandboxes and their tools; no key management, no takeover
)

// Credentials is the body of POST /v1/auth/signup and POST /v1/auth/login.
type Credentials struct {
	Email    string `json:"email"`
	Password string `json:"password" nul:"allow"` // hashed, never stored
}

// TokenResponse answers signup and login: a short-lived access token (a
// JWT) for the key-management routes, and the account.
type TokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"` // "bearer"
	ExpiresIn   int    `json:"expires_in"` // seconds
	// RefreshToken is always null: refresh tokens are not issued. The
	// field is kept for clients of the reference API.
	RefreshToken *string `json:"refresh_token"`
	Account      Account `json:"account"`
}

// Account is the body of GET /v1/account (AccountOut in the reference).
type Account struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
	// APIKey is the key the request was made with; absent when the
	// caller used an access token. `boxkite logout` revokes it by its id.
	APIKey *APIKey `json:"api_key,omitempty"`
	// ScrubOutput says whether command output the API returns (exec,
	// process output and streams, the interpreter) has secret-shaped
	// strings replaced by placeholders such as [REDACTED_AWS_KEY]. On by
	// default; PATCH /v1/account turns it off. The audit log is scrubbed
	// either way.
	ScrubOutput bool `json:"scrub_output"`
	// Organization is set when the API key is an organization's: the
	// account is then the organization, and the key acts with its role
	// lowered to its holder's role there (docs/organizations.md).
	Organization *AccountOrganization `json:"organization,omitempty"`
}

// AccountOrganization is the organization an API key acts for, in
// GET /v1/account.
type AccountOrganization struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Role is the key holder's role in the organization: owner, admin or member.
	Role string `json:"role"`
	// MemberID is the key holder's own (personal) account.
	MemberID string `json:"member_id"`
}

// AccountUpdate is the body of PATCH /v1/account: the settings to change;
// absent ones stay as they are.
type AccountUpdate struct {
	ScrubOutput *bool `json:"scrub_output,omitempty"`
}

// APIKeyPrefix starts every API key the server mints.
const APIKeyPrefix = "bxk_live_"

// apiKeyLen is the length of the part after APIKeyPrefix: base64url
// (no padding) of 32 random bytes.
const apiKeyLen = 43

// ValidAPIKey reports whether key has the shape of a boxkite API key:
// APIKeyPrefix and 43 base64url characters (A-Z, a-z, 0-9, '-', '_'). The
// server mints and checks keys with it; the CLI refuses to store any other.
func ValidAPIKey(key string) bool {
	rest, ok := strings.CutPrefix(key, APIKeyPrefix)
	if !ok || len(rest) != apiKeyLen {
		return false
	}
	for _, c := range []byte(rest) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// APIKey is how the API shows a key (ApiKeyOut): never the secret.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"` // "bxk_live_" and the first 8 characters of the secret
	Role       string     `json:"role"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// MemberID is the member who holds a key of an organization; absent
	// for a personal account's key.
	MemberID string `json:"member_id,omitempty"`
	// ExpiresAt is when the key stops working; null: never.
	ExpiresAt *time.Time `json:"expires_at"`
	// Expired is whether ExpiresAt has passed, by the server's clock when
	// it answered: an expired key is refused as a revoked one is, and
	// stays listed (marked so) until revoked.
	Expired bool `json:"expired"`
}

// CreateAPIKeyRequest is the body of POST /v1/api-keys.
type CreateAPIKeyRequest struct {
	Name string `json:"name"`           // 1..200 characters
	Role string `json:"role,omitempty"` // admin (default) or member
	// ExpiresInSeconds makes the key stop working that long after it is
	// made (MinKeyExpiresInSeconds..MaxKeyExpiresInSeconds); absent: never.
	ExpiresInSeconds *int64 `json:"expires_in_seconds,omitempty"`
}

// APIKeyCreated answers POST /v1/api-keys; Key is shown this once.
type APIKeyCreated struct {
	APIKey
	Key string `json:"key"`
}

// Usage is the body of GET /v1/usage. A nil limit means none is set.
type Usage struct {
	MonthlySandboxHoursUsed  float64  `json:"monthly_sandbox_hours_used"`
	MonthlySandboxHoursLimit *float64 `json:"monthly_sandbox_hours_limit"`
	ConcurrentSandboxes      int      `json:"concurrent_sandboxes"`
	ConcurrentSandboxesLimit *int     `json:"concurrent_sandboxes_limit"`
}

// SSHKey is a public key registered for the bastion.
type SSHKey struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	PublicKey   string    `json:"public_key"`  // "type base64", without options or comment
	Fingerprint string    `json:"fingerprint"` // SHA256:… as ssh-keygen -l prints it
	CreatedAt   time.Time `json:"created_at"`
}

// AddSSHKeyRequest is the body of POST /v1/account/ssh-keys. PublicKey is
// one line in authorized_keys format; Name defaults to the key's comment.
type AddSSHKeyRequest struct {
	Name      string `json:"name,omitempty"`
	PublicKey string `json:"public_key"`
}
