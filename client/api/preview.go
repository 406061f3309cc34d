package api

import "time"

// Preview URLs (docs/previews.md): a URL with a short-lived token that
// serves a port inside a sandbox's network namespace to a browser.
const (
	DefaultPreviewTTL = 3600  // seconds
	MinPreviewTTL     = 30    // seconds
	MaxPreviewTTL     = 86400 // seconds
	// PreviewTokenParam is the query parameter a preview URL carries its
	// token in; the first visit exchanges it for the PreviewCookie.
	PreviewTokenParam = "boxkite_preview_token"
	PreviewCookie     = "boxkite_preview"
	// CodePreviewUnauthorized (401): a preview request without a valid
	// token: none, unknown, expired, revoked, or another preview's.
	CodePreviewUnauthorized = "preview_unauthorized"
	// CodePreviewUnreachable (502): nothing answers on the port inside
	// the sandbox.
	CodePreviewUnreachable = "preview_unreachable"
)

// CreatePreviewRequest is the body of POST /v1/sandboxes/{id}/preview/{port}.
type CreatePreviewRequest struct {
	TTLSeconds int `json:"ttl_seconds,omitempty"` // 30..86400; default 3600
}

// Preview is one preview URL of a sandbox's port. Token is shown once, at
// creation; URL and PathURL carry it.
type Preview struct {
	ID        string     `json:"id"`
	SandboxID string     `json:"sandbox_id"`
	Port      int        `json:"port"`
	URL       string     `json:"url,omitempty"`      // host-based: <scheme>://<port>-<sandbox id>.<preview domain>/?boxkite_preview_token=…
	PathURL   string     `json:"path_url,omitempty"` // the fallback: <server>/preview/<sandbox id>/<port>/?boxkite_preview_token=…
	Token     string     `json:"token,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}
