package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// keySize is the size of every key here: AES-256.
const keySize = 32

// A Keyring holds the server's key-encryption keys. The first, the
// primary, wraps the data key of every secret written; the others only
// unwrap data keys written before a rotation, until Service.Rotate has
// rewrapped them all under the primary.
type Keyring struct {
	keys []kek
}

type kek struct {
	id   string
	aead cipher.AEAD
}

// ParseKeyring reads the text of a secrets key file: one key a line, 32
// random bytes in base64 (standard or URL alphabet, padded or not), the
// primary first. Blank lines and lines starting with # are skipped.
// Rotating is putting a new key on the first line and keeping the old
// ones below it until the server has rewrapped every data key.
func ParseKeyring(text string) (*Keyring, error) {
	var k Keyring
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		raw, err := decodeKey(line)
		if err != nil {
			return nil, fmt.Errorf("secrets key line %d: %w", i+1, err)
		}
		e, err := newKEK(raw)
		if err != nil {
			return nil, err
		}
		if seen[e.id] {
			return nil, fmt.Errorf("secrets key line %d: the same key appears twice", i+1)
		}
		seen[e.id] = true
		k.keys = append(k.keys, e)
	}
	if len(k.keys) == 0 {
		return nil, errors.New("the secrets key file holds no key; generate one with `head -c 32 /dev/urandom | base64`")
	}
	return &k, nil
}

// NewKey returns a fresh key in the form ParseKeyring reads.
func NewKey() string {
	b := make([]byte, keySize)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.StdEncoding.EncodeToString(b)
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != keySize {
				return nil, fmt.Errorf("a key is %d bytes, this one %d", keySize, len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

func newKEK(raw []byte) (kek, error) {
	aead, err := newAEAD(raw)
	if err != nil {
		return kek{}, err
	}
	sum := sha256.Sum256(append([]byte("boxkite secrets key id\x00"), raw...))
	return kek{id: hex.EncodeToString(sum[:8]), aead: aead}, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("new cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// sealVersion starts every value Seal returns.
const sealVersion = "v1"

// Seal encrypts a small value another subsystem keeps at rest (a webhook's
// signing secret) directly under the primary key, bound to ad, so that it
// opens only for the same ad. The result names its key:
// "v1.<key id>.<base64url of nonce and ciphertext>".
func (k *Keyring) Seal(plain, ad []byte) (string, error) {
	p := k.keys[0]
	return sealVersion + "." + p.id + "." + base64.RawURLEncoding.EncodeToString(sealWith(p.aead, plain, sealAD(ad))), nil
}

// Open decrypts a value of Seal with whichever key of the ring sealed it.
func (k *Keyring) Open(sealed string, ad []byte) ([]byte, error) {
	version, rest, _ := strings.Cut(sealed, ".")
	id, text, ok := strings.Cut(rest, ".")
	if version != sealVersion || !ok {
		return nil, errors.New("open sealed value: not a sealed value")
	}
	e, found := k.byID(id)
	if !found {
		return nil, fmt.Errorf("open sealed value (key %s): the secrets key file does not hold its key", id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("open sealed value: %w", err)
	}
	v, err := openWith(e.aead, raw, sealAD(ad))
	if err != nil {
		return nil, fmt.Errorf("open sealed value: %w", err)
	}
	return v, nil
}

// sealAD keeps Seal's ciphertexts apart from the secrets' own.
func sealAD(ad []byte) []byte { return append([]byte("boxkite sealed value\x00"), ad...) }

// PrimaryID is the id of the key new data keys are wrapped with: the
// first 8 bytes of a hash of the key, in hex. It names a key without
// revealing it.
func (k *Keyring) PrimaryID() string { return k.keys[0].id }

func (k *Keyring) byID(id string) (kek, bool) {
	for _, e := range k.keys {
		if e.id == id {
			return e, true
		}
	}
	return kek{}, false
}

// Associated data bind a ciphertext to its secret and account, so a row's
// value cannot be moved to another row (or another tenant) and still open.
func valueAD(r *Record) []byte {
	return []byte("boxkite secret value\x00" + r.AccountID + "\x00" + r.ID)
}

func wrapAD(r *Record, keyID string) []byte {
	return []byte("boxkite secret data key\x00" + r.AccountID + "\x00" + r.ID + "\x00" + keyID)
}

// seal encrypts value under a new data key and wraps that key with the
// primary, filling r's KeyID, WrappedKey and Ciphertext.
func (k *Keyring) seal(r *Record, value []byte) error {
	dk := make([]byte, keySize)
	_, _ = rand.Read(dk)
	aead, err := newAEAD(dk)
	if err != nil {
		return err
	}
	r.Ciphertext = sealWith(aead, value, valueAD(r))
	p := k.keys[0]
	r.KeyID = p.id
	r.WrappedKey = sealWith(p.aead, dk, wrapAD(r, p.id))
	clear(dk)
	return nil
}

func sealWith(aead cipher.AEAD, plain, ad []byte) []byte {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, plain, ad)
}

func openWith(aead cipher.AEAD, sealed, ad []byte) ([]byte, error) {
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, errors.New("ciphertext too short")
	}
	return aead.Open(nil, sealed[:n], sealed[n:], ad)
}

// errUnknownKey is opening a data key wrapped by a key the keyring lacks.
var errUnknownKey = errors.New("the secret's data key was wrapped with a key the secrets key file does not hold")

// dataKey unwraps r's data key.
func (k *Keyring) dataKey(r *Record) ([]byte, error) {
	e, ok := k.byID(r.KeyID)
	if !ok {
		return nil, fmt.Errorf("secret %s (key %s): %w", r.ID, r.KeyID, errUnknownKey)
	}
	dk, err := openWith(e.aead, r.WrappedKey, wrapAD(r, r.KeyID))
	if err != nil {
		return nil, fmt.Errorf("unwrap data key of secret %s: %w", r.ID, err)
	}
	return dk, nil
}

// open decrypts r's value.
func (k *Keyring) open(r *Record) ([]byte, error) {
	dk, err := k.dataKey(r)
	if err != nil {
		return nil, err
	}
	defer clear(dk)
	aead, err := newAEAD(dk)
	if err != nil {
		return nil, err
	}
	v, err := openWith(aead, r.Ciphertext, valueAD(r))
	if err != nil {
		return nil, fmt.Errorf("decrypt secret %s: %w", r.ID, err)
	}
	return v, nil
}

// rewrap wraps r's data key with the primary; the value's ciphertext is
// untouched. It reports false when r is wrapped with the primary already.
func (k *Keyring) rewrap(r *Record) (bool, error) {
	p := k.keys[0]
	if r.KeyID == p.id {
		return false, nil
	}
	dk, err := k.dataKey(r)
	if err != nil {
		return false, err
	}
	defer clear(dk)
	r.KeyID = p.id
	r.WrappedKey = sealWith(p.aead, dk, wrapAD(r, p.id))
	return true, nil
}
