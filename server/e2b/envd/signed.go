package envd

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/internal/netsource"
)

// DefaultSignedURLFailures is how many signed /files URLs a source may
// present a minute that no running sandbox signed (Options).
const DefaultSignedURLFailures = 60

// signedURL authenticates a signed /files URL (sandbox.uploadUrl(),
// downloadUrl()): the sandbox whose access token signed it and the key the
// token was issued to. When it cannot, it answers r itself (401, 429 or
// 500) and ok is false.
//
// On the shared E2B_SANDBOX_URL the URL names no sandbox and the
// signature hides the token, so every running sandbox's token for each of
// its account's keys is tried, a hash each; a URL on the sandbox's own
// host (49983-<id>.<domain>, the SDK's form without E2B_SANDBOX_URL) is
// checked against that sandbox's only. Each source's failed checks are
// counted (limits.RateLimiter's one-minute windows, in memory per server:
// each check takes a unit before it runs and a success refunds it, so
// checks at once cannot pass the limit together), and past the limit its
// signed URLs are refused before any is looked up, so the unauthenticated
// cost of guessing is bounded.
func (h *Handler) signedURL(w http.ResponseWriter, r *http.Request) (id, keyID string, ok bool) {
	ctx := r.Context()
	now := h.now()
	if at, expired := signatureExpired(r.URL.Query(), now); expired {
		writeHint(w, http.StatusUnauthorized, "unauthenticated",
			"this signed URL expired at "+at,
			"ask the SDK for a new one (sandbox.uploadUrl() or downloadUrl(), with useSignatureExpiration)")
		return "", "", false
	}
	src := sourceKey(r)
	allowed, _, retry := h.signFails.Allow(src, h.signFailLimit, now)
	if !allowed {
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		writeHint(w, http.StatusTooManyRequests, "rate_limited",
			"too many signed URLs from this address that no running sandbox signed",
			"retry after "+strconv.Itoa(int(retry.Seconds())+1)+" s with a URL the SDK signed for a running sandbox")
		return "", "", false
	}
	id, keyID, err := h.signer(r, hostSandbox(r.Host))
	if err != nil {
		h.log.ErrorContext(ctx, "check signed URL", "err", err)
		writeStatus(w, http.StatusInternalServerError, "internal", "internal error")
		return "", "", false
	}
	if id == "" {
		writeHint(w, http.StatusUnauthorized, "unauthenticated",
			"invalid signature: no running sandbox's access token signed this URL for "+opName(r),
			"sign it with the SDK (sandbox.uploadUrl() or downloadUrl()) of a running sandbox; a URL ends with its sandbox, and with the API key its token was issued for")
		return "", "", false
	}
	h.signFails.Refund(src, now)
	return id, keyID, true
}

// signer finds the running sandbox whose access token signed r's URL,
// with the key the token was issued to, or "" when none did: only
// sandbox only's when it is not "".
func (h *Handler) signer(r *http.Request, only string) (id, keyID string, err error) {
	running, err := h.sandboxes.Running(r.Context(), only)
	if err != nil {
		return "", "", err
	}
	for _, sb := range running {
		if only != "" && sb.SandboxID != only {
			continue
		}
		keyID, ok, err := h.signedBy(r, sb.SandboxID, sb.KeyIDs)
		if err != nil || ok {
			return sb.SandboxID, keyID, err
		}
	}
	return "", "", nil
}

// signedBy returns the key, of keyIDs, whose access token for sandbox id
// signed r's URL.
func (h *Handler) signedBy(r *http.Request, id string, keyIDs []string) (string, bool, error) {
	op := opName(r)
	for _, keyID := range keyIDs {
		access, err := h.tokens.Access(r.Context(), id, keyID)
		if err != nil {
			return "", false, err
		}
		if signedURLValid(r.URL.Query(), op, access, h.now()) {
			return keyID, true, nil
		}
	}
	return "", false, nil
}

// opName is the operation a signed URL is signed for: write for an
// upload, read otherwise.
func opName(r *http.Request) string {
	if r.Method == http.MethodPost {
		return "write"
	}
	return "read"
}

// hostSandbox is the sandbox a request's host names, "<envd port>-<id>."
// followed by any domain (E2B's form), or "".
func hostSandbox(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, _, found := strings.Cut(strings.ToLower(host), ".")
	id, ok := strings.CutPrefix(label, PortEnvd+"-")
	if !found || !ok || !validKeyID(id) {
		return ""
	}
	return id
}

// sourceKey is who a request counts against (netsource.Key: its
// address, or the /64 of an IPv6 one).
func sourceKey(r *http.Request) string { return netsource.Key(r.RemoteAddr) }

// signatureExpired reports whether the URL's signature_expiration (Unix
// seconds) has passed, with that time; a malformed one is left to the
// signature check, which refuses it.
func signatureExpired(q url.Values, now time.Time) (at string, expired bool) {
	v := q.Get("signature_expiration")
	if v == "" {
		return "", false
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || now.Unix() <= sec {
		return "", false
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339), true
}

// writeHint answers with the error envelope, a hint included.
func writeHint(w http.ResponseWriter, status int, code, msg, hint string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "hint": hint})
}
