package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/exec"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sandbox"
)

// Idempotency-Key (reference §3.1): a POST carrying the header is done at
// most once per (credential, method, path, key). A repeat gets the first
// answer again, marked Idempotent-Replayed: true, as long as that answer
// was not a 5xx (those are forgotten, so the retry runs). Records live in
// the store for idempotencyTTL and so survive restarts.
//
// Not deduplicated: streamed answers (exec with Accept:
// application/x-ndjson) and streamed uploads (POST …/files/archive),
// whose bodies are not buffered; public routes (signup, login), which
// have no credential to scope the key to; and methods other than POST.
const (
	idempotencyTTL = 24 * time.Hour
	// idempotencyStale is when an in-progress record is taken to belong to
	// a server that died mid-request: longer than any request runs (the
	// longest exec and its grace).
	idempotencyStale = api.MaxExecTimeout*time.Second + exec.Grace + 5*time.Minute
	// purgeInterval is how often Run deletes expired records.
	purgeInterval = 10 * time.Minute
)

// idempotencyApplies reports whether the request's Idempotency-Key is honoured.
func (s *Server) idempotencyApplies(pattern string, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get(api.HeaderIdempotencyKey) == "" || s.streamingPOST[pattern] {
		return false
	}
	if pattern == "POST /v1/sandboxes/{id}/exec" && strings.Contains(r.Header.Get("Accept"), api.ContentTypeNDJSON) {
		return false
	}
	return true
}

// credentialOf names the caller's credential, the scope of its keys.
func credentialOf(ri *authz.Caller) string {
	if ri.Key != nil {
		return "key:" + ri.Key.ID
	}
	return "account:" + ri.Account.ID
}

// idempotent serves an authenticated POST carrying an Idempotency-Key:
// it claims the key, runs h and keeps the answer, or replays the answer
// of the first request with the key. It writes errors itself, so that
// an error answer is kept like any other.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request) error) error {
	ctx := r.Context()
	key := r.Header.Get(api.HeaderIdempotencyKey)
	if !limits.ValidIdempotencyKey(key) {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Idempotency-Key must be 1 to %d printable ASCII characters", httpx.MaxIdempotencyKeyLen).
			WithHint("use a random UUID per logical request")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpx.MaxExecBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return apihttp.TooLarge(httpx.MaxExecBody)
		}
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "read request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	now := s.now()
	rec := &model.IdempotencyRecord{
		Credential: credentialOf(authz.From(ctx)), Method: r.Method, Path: r.URL.Path, Key: key,
		RequestHash: hex.EncodeToString(sum[:]), State: model.IdempotencyInProgress,
		CreatedAt: now, ExpiresAt: now.Add(idempotencyTTL),
	}
	old, err := s.store.ClaimIdempotencyKey(ctx, rec, now.Add(-idempotencyStale))
	if err != nil {
		return fmt.Errorf("claim idempotency key: %w", err)
	}
	if old != nil {
		return limits.Replay(w, old, rec.RequestHash)
	}

	// From here the claim must be completed or released, even if h panics
	// or the client goes away.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sandbox.CleanupTimeout)
	defer cancel()
	capture := &limits.Capture{ResponseWriter: w}
	kept := false
	defer func() {
		if !kept {
			if err := s.store.ReleaseIdempotencyKey(sctx, rec); err != nil {
				s.log.ErrorContext(ctx, "release idempotency key", "err", err)
			}
		}
	}()
	if err := h(capture, r); err != nil {
		if capture.Status != 0 {
			return err // the answer had started; the caller logs it
		}
		s.writeError(capture, r, err)
	}
	status := capture.Status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http sends an empty 200
	}
	if status >= 500 || capture.Overflow {
		return nil
	}
	rec.State, rec.Status, rec.ContentType, rec.Body = model.IdempotencyCompleted, status, capture.Header().Get("Content-Type"), capture.Body.Bytes()
	rec.ExpiresAt = s.now().Add(idempotencyTTL)
	if err := s.store.CompleteIdempotencyKey(sctx, rec); err != nil {
		s.log.ErrorContext(ctx, "keep idempotent answer", "err", err)
		return nil
	}
	kept = true
	return nil
}

// sweep does Run's periodic clean-up: expired idempotency records, at
// most every purgeInterval. Only Run calls it, so lastPurge needs no lock.
func (s *Server) sweep(ctx context.Context) {
	now := s.now()
	if now.Sub(s.lastPurge) < purgeInterval {
		return
	}
	s.lastPurge = now
	if err := s.store.PurgeIdempotencyKeys(ctx, now); err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "purge idempotency keys", "err", err)
	}
}
