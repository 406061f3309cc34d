package sidecar

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// accepts reports whether token is the sidecar's, without marking it used.
func (a *auth) accepts(token string) bool {
	got := sha256.Sum256([]byte(token))
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.configured && subtle.ConstantTimeCompare(got[:], a.hash[:]) == 1
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

// warmCommand is what Warm runs: a program every image has, which does
// nothing, by the same path as a plain exec of it (direct.go).
const warmCommand = "true"

// warmTimeout bounds Warm's command.
const warmTimeout = 10 * time.Second

// Warm runs warmCommand once as an exec runs a command, outside any
// request: no route, budget, metric or claim sees it. A warm pool's
// sidecar calls it before it serves, so that what a process pays once,
// at its first exec, is paid while it waits in the pool and not on a
// create's path (issue 27, bench/issue27/session9-warm9.md): Go's
// one-time pidfd probe (a pidfd of itself, a waitid, a signal and a
// child cloned with CLONE_PIDFD), the look at /bin/sh (direct.go),
// /dev/null opened, an epoll instance for the exec pollers, the read
// buffers, and the exec path's code faulted in. The command runs as the
// sandbox user in the workspace and leaves nothing behind; it is not a
// use of the sidecar, so the claim that follows is allowed.
func (h *Handler) Warm(ctx context.Context) error {
	env, err := commandEnv(h.env, nil)
	if err != nil {
		return fmt.Errorf("warm exec: %w", err)
	}
	spec := execSpec{command: warmCommand, dir: h.workspace, env: env, timeout: warmTimeout, maxOutput: 1}
	out := h.runCommand(ctx, spec, func(string, []byte) {})
	switch {
	case out.spawnErr != nil:
		return fmt.Errorf("warm exec: %w", out.spawnErr)
	case out.timedOut || out.exitCode != 0:
		return fmt.Errorf("warm exec: %s: exit status %d (timed out: %t)", warmCommand, out.exitCode, out.timedOut)
	}
	return nil
}
