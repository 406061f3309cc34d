package envd

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Tokens issues and checks the per-sandbox credentials of envd. A token is
// an HMAC of the sandbox id under the server's secret, so every server
// sharing the store derives the same one, it needs no storage, and it is
// as stable across restarts as the secret. The E2B SDK never sends the API
// key to envd: the access token (the create response's envdAccessToken) is
// its only credential there. The traffic token (trafficAccessToken) is what
// the code interpreter's SDK sends on its routes, which do not all carry
// the access token.
type Tokens struct {
	key func(ctx context.Context) ([]byte, error)
}

// NewTokens returns Tokens keyed by what key returns (a secret of at least
// 32 bytes, the same on every server).
func NewTokens(key func(ctx context.Context) ([]byte, error)) *Tokens {
	return &Tokens{key: key}
}

// Access returns the envd access token of a sandbox.
func (t *Tokens) Access(ctx context.Context, sandboxID string) (string, error) {
	return t.derive(ctx, "envd-access", sandboxID)
}

// Traffic returns the code interpreter's traffic token of a sandbox.
func (t *Tokens) Traffic(ctx context.Context, sandboxID string) (string, error) {
	return t.derive(ctx, "envd-traffic", sandboxID)
}

func (t *Tokens) derive(ctx context.Context, purpose, sandboxID string) (string, error) {
	key, err := t.key(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("boxkite e2b " + purpose + "\x00" + sandboxID))
	return "bxe2b_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// equal compares a presented token with the expected one in constant time.
func equal(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// signature is the E2B SDK's signed-URL signature of a /files request:
// "v1_" and unpadded standard base64 of
// sha256("<path>:<read|write>:<user>:<access token>[:<expiry>]").
func signature(path, op, user, token string, expiry string) string {
	s := path + ":" + op + ":" + user + ":" + token
	if expiry != "" {
		s += ":" + expiry
	}
	sum := sha256.Sum256([]byte(s))
	return "v1_" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
}

// signedURLValid checks the signature query parameters that
// sandbox.uploadUrl()/downloadUrl() put in place of X-Access-Token.
func signedURLValid(q url.Values, op, token string, now time.Time) bool {
	sig := q.Get("signature")
	if sig == "" {
		return false
	}
	exp := q.Get("signature_expiration")
	if exp != "" {
		sec, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || now.Unix() > sec {
			return false
		}
	}
	return equal(sig, signature(q.Get("path"), op, q.Get("username"), token, exp))
}
