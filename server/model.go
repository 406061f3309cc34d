package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Account is one tenant. Every sandbox and key belongs to exactly one.
type Account struct {
	ID        string
	Email     string
	CreatedAt time.Time
	// KeepOutputSecrets turns off the scrubbing of secret-shaped strings
	// in the command output the API returns (scrub.go); the audit log is
	// scrubbed regardless. The zero value scrubs.
	KeepOutputSecrets bool
}

// API key roles. Member keys cannot take over a PTY or manage keys.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// APIKey is a stored credential. The secret itself is never stored: only its
// SHA-256 (Hash) and a short display Prefix.
type APIKey struct {
	ID         string
	AccountID  string
	Name       string
	Hash       string // lower-case hex SHA-256 of the whole key string
	Prefix     string // "bxk_live_" + the first 8 characters of the secret, for display
	Role       string // RoleAdmin or RoleMember
	CreatedAt  time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}

// StatusCreating is a sandbox row whose Driver.Create has not returned yet.
// It never reaches the API as a settled state: a failed create deletes the
// row, and a row still creating at start-up was interrupted by a crash.
const StatusCreating = "creating"

// Destroy reasons recorded in Sandbox.DestroyReason.
const (
	ReasonDeleted = "deleted" // DELETE /v1/sandboxes/{id}
	ReasonExpired = "expired" // the reaper, at expires_at
	ReasonLost    = "lost"    // the sidecar died, or was gone when the server started
)

// Sandbox is the control plane's record of one sandbox, including what the
// API never shows: the sidecar endpoint and its token.
type Sandbox struct {
	ID              string
	AccountID       string
	Label           string
	Size            string
	StorageGB       float64
	LifetimeMinutes int
	Status          string // StatusCreating, api.StatusActive, api.StatusDestroyed, api.StatusLost
	DestroyReason   string
	CreatedAt       time.Time
	ExpiresAt       time.Time
	DestroyedAt     *time.Time
	Driver          string   // which driver created it, e.g. "local"
	Endpoint        Endpoint // set once Driver.Create returned
	// PausedWith is the pause mode of a paused sandbox (api.Pause*), and
	// PausedAt since when; PausedTotal is the time it spent paused
	// before, which monthly hours do not count (pause.go).
	PausedWith  string
	PausedAt    *time.Time
	PausedTotal time.Duration
}

// Active reports whether operations on the sandbox are accepted.
func (sb *Sandbox) Active() bool { return sb.Status == api.StatusActive }

// Live reports whether the sandbox holds anything on its substrate:
// active, or paused.
func (sb *Sandbox) Live() bool { return sb.Status == api.StatusActive || sb.Status == api.StatusPaused }

// toAPI converts the record to its wire form, dropping the endpoint and token.
func (sb *Sandbox) toAPI() api.Sandbox {
	out := api.Sandbox{
		ID:              sb.ID,
		Status:          sb.Status,
		Label:           sb.Label,
		Size:            sb.Size,
		StorageGB:       sb.StorageGB,
		LifetimeMinutes: sb.LifetimeMinutes,
		CreatedAt:       sb.CreatedAt.UTC(),
		ExpiresAt:       sb.ExpiresAt.UTC(),
		DestroyReason:   sb.DestroyReason,
	}
	if sb.DestroyedAt != nil {
		t := sb.DestroyedAt.UTC()
		out.DestroyedAt = &t
	}
	if sb.PausedAt != nil {
		t := sb.PausedAt.UTC()
		out.PausedWith, out.PausedAt = sb.PausedWith, &t
	}
	return out
}

// KeyPrefix starts every API key.
const KeyPrefix = "bxk_live_"

// keyPattern is the whole key: the prefix and base64url of 32 random bytes.
var keyPattern = regexp.MustCompile(`^bxk_live_[A-Za-z0-9_-]{43}$`)

// NewAPIKey returns a fresh random key string ("bxk_live_" + 43 url-safe characters).
func NewAPIKey() string {
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(randBytes(32))
}

// ValidAPIKey reports whether key has the shape of a boxkite API key.
func ValidAPIKey(key string) bool { return keyPattern.MatchString(key) }

// HashAPIKey returns the stored form of key: lower-case hex SHA-256.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// displayPrefix is the part of a key that may be shown again after creation.
func displayPrefix(key string) string {
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

// randBytes returns n bytes from crypto/rand, which never fails on Linux
// (Go 1.24+ crashes the program rather than returning short reads).
func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
