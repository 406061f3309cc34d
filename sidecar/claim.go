package sidecar

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/boxkite/boxkite/client/api"
)

// claimPattern is the route a warm pool's driver calls to hand a waiting
// sidecar to a new sandbox (Options.Claimable).
const claimPattern = "POST /claim"

// maxTokenLen bounds a claimed token; drivers send 64 hex digits.
const maxTokenLen = 512

// auth holds the sidecar's token. A claim replaces it; every other route
// only reads it.
type auth struct {
	mu         sync.RWMutex
	configured bool              // a token is set; else fail closed
	hash       [sha256.Size]byte // of the token, so the compare does not leak its length
	claimed    bool              // /claim succeeded once
	used       atomic.Bool       // an authorized request other than /claim was served
}

func (a *auth) set(token string) {
	a.configured = token != ""
	a.hash = sha256.Sum256([]byte(token))
}

// claimRequest is the body of POST /claim.
type claimRequest struct {
	Token string `json:"token"`
}

// claim serves POST /claim, authorized by the pool's token: it replaces
// that token with the sandbox's own, so the pool token stops working at
// once. A claim is refused once the sidecar has served anything but
// /health: only a sidecar nobody has used (no command run, no file
// written, no process, interpreter or terminal started) may become a new
// sandbox, which is what makes a claimed sandbox as clean as a fresh one
// without resetting anything. It can succeed only once.
func (h *Handler) claim(w http.ResponseWriter, r *http.Request) error {
	var req claimRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Token == "" || len(req.Token) > maxTokenLen || strings.ContainsAny(req.Token, " \t\r\n") {
		return api.Errorf(http.StatusUnprocessableEntity, api.CodeValidation, "token must be 1 to %d bytes without spaces", maxTokenLen)
	}
	h.auth.mu.Lock()
	defer h.auth.mu.Unlock()
	switch {
	case h.auth.claimed:
		return api.Errorf(http.StatusConflict, api.CodeConflict, "this sidecar was claimed already")
	case h.auth.used.Load():
		return api.Errorf(http.StatusConflict, api.CodeConflict, "this sidecar was used before its claim")
	}
	h.auth.set(req.Token)
	h.auth.claimed = true
	w.WriteHeader(http.StatusNoContent)
	return nil
}
