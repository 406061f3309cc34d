package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// One-time sign-in links (`boxkite ui`). A link's code is an admin API key
// minted for it (named LinkKeyName) and its expiry, sealed (AES-256-GCM)
// with Config.LinkKey, which every server sharing the database derives
// alike: any of them opens the link, and none keeps anything of it.
// Opening a link mints the session's key with the link's, then revokes
// the link's key with the session's; the store revokes a key once, so of
// two browsers opening one link only the first is signed in (the other's
// new key is revoked at once). The key of a link nobody opened is of no
// use after its expiry (the console refuses the link, and nobody else
// has the key) and is revoked at the account's next sign-in or link.

// LinkKeyName is the name of the API keys the console mints for one-time
// links.
const LinkKeyName = "console link"

// linkKeySize is the size of the sealing key (AES-256).
const linkKeySize = 32

// linkAAD binds a sealed code to its use.
const linkAAD = "boxkite console link v1"

// link is what a link's code carries.
type link struct {
	key session // the link's API key
	exp time.Time
}

// sealLink returns l's code: base64url(nonce, AES-GCM(exp, len(key id), key id, key)).
func sealLink(key []byte, l link) (string, error) {
	aead, err := linkAEAD(key)
	if err != nil {
		return "", err
	}
	if len(l.key.keyID) > 255 {
		return "", errors.New("seal link: key id too long")
	}
	plain := binary.BigEndian.AppendUint64(nil, uint64(l.exp.Unix()))
	plain = append(plain, byte(len(l.key.keyID)))
	plain = append(plain, l.key.keyID...)
	plain = append(plain, l.key.key...)
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(linkAAD))), nil
}

// openLinkCode returns what code carries, if it was sealed with key and
// holds a key of a session's shape.
func openLinkCode(key []byte, code string) (link, bool) {
	aead, err := linkAEAD(key)
	if err != nil || len(code) > 1024 {
		return link{}, false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(code)
	if err != nil || len(sealed) < aead.NonceSize() {
		return link{}, false
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(linkAAD))
	if err != nil || len(plain) < 9 || len(plain) < 9+int(plain[8]) {
		return link{}, false
	}
	exp := int64(binary.BigEndian.Uint64(plain))
	idLen := int(plain[8])
	s, ok := parseSession(string(plain[9:9+idLen]) + "." + string(plain[9+idLen:]))
	if !ok || exp <= 0 {
		return link{}, false
	}
	return link{key: s, exp: time.Unix(exp, 0)}, true
}

func linkAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != linkKeySize {
		return nil, fmt.Errorf("the link key has %d bytes, want %d", len(key), linkKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// LinkResponse answers POST /ui/links: Path, appended to the server's
// base URL, signs a browser in once before ExpiresAt.
type LinkResponse struct {
	Path      string    `json:"path"`
	ExpiresAt time.Time `json:"expires_at"`
}

// createLink serves POST /ui/links for `boxkite ui`: with an admin API key
// in the Authorization header it mints the link's key (POST /v1/api-keys,
// so a member key is refused there) and answers a one-time link to it.
func (c *Console) createLink(w http.ResponseWriter, r *http.Request) error {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "missing API key").
			WithHint("send Authorization: Bearer <admin API key>; `boxkite ui` does")
	}
	if r.Header.Get("Origin") != "" {
		return errCrossOrigin // links are minted by the CLI, never by a page
	}
	ctx := r.Context()
	sealKey, err := c.cfg.LinkKey(ctx)
	if err != nil {
		return fmt.Errorf("load the link key: %w", err)
	}
	var created api.APIKeyCreated
	if err := c.call(ctx, r, http.MethodPost, "/v1/api-keys", auth, api.CreateAPIKeyRequest{Name: LinkKeyName, Role: "admin", ExpiresInSeconds: keyExpiry(c.cfg.LinkTTL)}, &created); err != nil {
		return err
	}
	l := link{key: session{keyID: created.ID, key: created.Key}, exp: c.cfg.Now().Add(c.cfg.LinkTTL).Truncate(time.Second)}
	c.revokeStale(ctx, r, l.key)
	code, err := sealLink(sealKey, l)
	if err != nil {
		c.revokeOwn(r, l.key)
		return err
	}
	writeJSON(w, http.StatusCreated, LinkResponse{Path: Prefix + "link/" + code, ExpiresAt: l.exp.UTC()})
	return nil
}

// openLink serves GET /ui/link/{code}: a valid link sets the session's
// cookie and sends the browser to the console; a used, expired or unknown
// one to the sign-in page.
func (c *Console) openLink(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if fromOtherSite(r) {
		// Left unused: its owner can still paste it into the address bar.
		http.Redirect(w, r, Prefix+"signin?link=elsewhere", http.StatusSeeOther)
		return
	}
	s, ok := c.takeLink(r)
	if !ok {
		http.Redirect(w, r, Prefix+"signin?link=expired", http.StatusSeeOther)
		return
	}
	c.replaceSession(w, r, s)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// fromOtherSite reports whether the browser followed r from another
// site's page (Sec-Fetch-Site). A link opens from the address bar, the
// browser `boxkite ui` starts or the console's own pages only: one that
// someone minted for their own account and planted in a page (or a
// redirect) would otherwise sign the visitor into that account, where
// what they then upload or type is the planter's (login CSRF). A client
// that sends no Sec-Fetch-Site (curl, an old browser) is let through.
func fromOtherSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	return false
}

// takeLink turns r's link into a session, once.
func (c *Console) takeLink(r *http.Request) (session, bool) {
	ctx := r.Context()
	sealKey, err := c.cfg.LinkKey(ctx)
	if err != nil {
		c.log.ErrorContext(ctx, "console: load the link key", "err", err)
		return session{}, false
	}
	l, ok := openLinkCode(sealKey, r.PathValue("code"))
	if !ok {
		return session{}, false
	}
	if !c.cfg.Now().Before(l.exp) {
		c.revokeOwn(r, l.key) // if nobody did yet
		return session{}, false
	}
	s, err := c.mintSession(ctx, r, l.key.auth())
	if err != nil {
		if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != http.StatusUnauthorized {
			c.log.WarnContext(ctx, "console: mint a session for a link", "err", err)
		}
		return session{}, false // 401: the link was opened already
	}
	if err := c.call(ctx, r, http.MethodDelete, "/v1/api-keys/"+l.key.keyID, s.auth(), nil, nil); err != nil {
		c.revokeOwn(r, s) // another browser opened the link first
		return session{}, false
	}
	return s, true
}

// revokeOwn revokes s's key with itself; a failure (the key is revoked
// already) is only logged.
func (c *Console) revokeOwn(r *http.Request, s session) {
	ctx := context.WithoutCancel(r.Context())
	if err := c.call(ctx, r, http.MethodDelete, "/v1/api-keys/"+s.keyID, s.auth(), nil, nil); err != nil {
		c.log.DebugContext(ctx, "console: revoke a key", "key", s.keyID, "err", err)
	}
}
