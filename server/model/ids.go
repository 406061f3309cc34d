package model

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"

	"github.com/boxkite/boxkite/client/api"
)

// KeyPrefix starts every API key.
const KeyPrefix = api.APIKeyPrefix

// NewAPIKey returns a fresh random key string ("bxk_live_" + 43 url-safe characters).
func NewAPIKey() string {
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(randBytes(32))
}

// ValidAPIKey reports whether key has the shape of a boxkite API key
// (api.ValidAPIKey, which the CLI checks keys with too).
func ValidAPIKey(key string) bool { return api.ValidAPIKey(key) }

// HashAPIKey returns the stored form of key: lower-case hex SHA-256.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// DisplayPrefix is the part of a key that may be shown again after creation.
func DisplayPrefix(key string) string {
	if len(key) < len(KeyPrefix)+8 {
		return KeyPrefix
	}
	return key[:len(KeyPrefix)+8]
}

// NewID returns a random UUID (version 4) string, the id format of accounts,
// keys and sandboxes; it is safe as a file name and a DNS label.
func NewID() string {
	b := randBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// idPattern is the shape of NewID's ids.
var idPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ValidID reports whether id has the shape of NewID's ids (a lower-case
// UUID), as every account, key, sandbox and snapshot id has.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// randBytes returns n bytes from crypto/rand, which never fails on Linux
// (Go 1.24+ crashes the program rather than returning short reads).
func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
