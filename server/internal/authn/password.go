package authn

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters of new hashes: OWASP's recommendation of 19 MiB,
// two passes, one lane (about 20 ms). Stored hashes carry their own
// parameters, so these can be raised without a migration.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonSaltLen   = 16
	argonKeyLen    = 32
)

// Bounds on the parameters of a stored hash: a corrupted or planted row
// must not make a login allocate gigabytes or spin for minutes.
const (
	maxArgonMemoryKiB = 1 << 20 // 1 GiB
	maxArgonTime      = 16
	maxArgonThreads   = 16
)

// maxConcurrentHashes bounds how many argon2 computations run at once, so
// a burst of logins costs at most this many times argonMemoryKiB.
const maxConcurrentHashes = 4

// argonParams are the tunables recorded in an encoded hash.
type argonParams struct {
	memory  uint32
	time    uint32
	threads uint8
}

var defaultArgonParams = argonParams{memory: argonMemoryKiB, time: argonTime, threads: argonThreads}

var errMalformedHash = errors.New("malformed password hash")

// HashPassword returns password hashed with argon2id in the PHC string
// format: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash> (unpadded base64).
func HashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	_, _ = rand.Read(salt) // never fails on Linux (Go 1.24+ crashes the program instead)
	return hashPassword(password, salt, defaultArgonParams)
}

func hashPassword(password string, salt []byte, p argonParams) string {
	key := argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.memory, p.time, p.threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// VerifyPassword reports whether password matches encoded, a hash made by
// HashPassword. The comparison takes the same time wherever they differ.
func VerifyPassword(encoded, password string) (bool, error) {
	p, salt, want, err := parseHash(encoded)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

func parseHash(encoded string) (argonParams, []byte, []byte, error) {
	var p argonParams
	parts := strings.Split(encoded, "$")
	// "", "argon2id", "v=19", "m=…,t=…,p=…", salt, hash
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errMalformedHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, fmt.Errorf("%w: unsupported version %q", errMalformedHash, parts[2])
	}
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &threads); err != nil {
		return p, nil, nil, fmt.Errorf("%w: parameters %q", errMalformedHash, parts[3])
	}
	if p.memory < 8 || p.memory > maxArgonMemoryKiB || p.time < 1 || p.time > maxArgonTime ||
		threads < 1 || threads > maxArgonThreads {
		return p, nil, nil, fmt.Errorf("%w: parameters out of range %q", errMalformedHash, parts[3])
	}
	p.threads = uint8(threads)
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return p, nil, nil, fmt.Errorf("%w: salt", errMalformedHash)
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return p, nil, nil, fmt.Errorf("%w: key", errMalformedHash)
	}
	return p, salt, key, nil
}

// Hasher runs password hashing with bounded concurrency. Its dummy hash
// stands in for the stored hash of an unknown email, so that a login for
// an account that does not exist costs what a wrong password costs.
type Hasher struct {
	sem   chan struct{}
	dummy func() string
}

func NewHasher() *Hasher {
	h := &Hasher{sem: make(chan struct{}, maxConcurrentHashes)}
	h.dummy = sync.OnceValue(func() string { return HashPassword("not a password; never matches anything") })
	return h
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hasher) release() { <-h.sem }

// Hash hashes a new password.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return HashPassword(password), nil
}

// Verify checks password against encoded; encoded "" (no account, or no
// password set) is checked against the dummy hash and never matches.
func (h *Hasher) Verify(ctx context.Context, encoded, password string) (bool, error) {
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	if encoded == "" {
		_, err := VerifyPassword(h.dummy(), password)
		return false, err
	}
	return VerifyPassword(encoded, password)
}
