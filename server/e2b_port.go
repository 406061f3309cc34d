package server

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/e2bport"
	"github.com/boxkite/boxkite/server/internal/hold"
	"github.com/boxkite/boxkite/server/model"
)

// MountE2B serves h for the requests match selects (E2B's control-plane
// paths and sandbox traffic), on the same listener as the API, behind
// the same request log, ids and panic recovery.
func (s *Server) MountE2B(h http.Handler, match func(*http.Request) bool) {
	s.e2b, s.e2bMatch = h, match
}

// E2B returns the control plane as the E2B facade consumes it
// (server/e2bport).
func (s *Server) E2B() e2b.ControlPlane { return s.e2bPort }

// e2bHeldHint is the way around a held-output refusal of an E2B code cell.
const e2bHeldHint = "retry when your account's other code cells, JSON execs and process output reads have answered"

// e2bFileOpHint is the way around a held-output refusal of an E2B file
// operation.
const e2bFileOpHint = "retry when your account's other file operations, code cells, JSON execs and process output reads have answered"

// newE2BPort wires the E2B facade's port: its auth part on the guard's
// credential plumbing, its lifecycle on the lifecycle hub and the
// snapshot service, its envd sessions on the sidecars.
func (s *Server) newE2BPort() (err error) {
	s.e2bPort, err = e2bport.New(e2bport.Deps{
		Store: s.store, Log: s.log, Now: func() time.Time { return s.now() },
		Touch:           func(k *model.APIKey) { s.touches.touch(k, s.now()) },
		TokenSecret:     s.jwtKey,
		CredentialValid: s.credentialValid,
		Sandboxes:       s.sandboxes, Snapshots: s.snap, Driver: s.baseDriver(), MaxLifetime: s.cfg.MaxLifetime,
		KeepsImages: s.images.Served(),
		Allowlists:  s.allowlists, Sidecars: s.sidecars, Audit: s.alog, DialSidecarWS: s.dialSidecarWS,
		WatchRevocation: func(keyID string, expires *time.Time, demotions int64, cancel context.CancelCauseFunc) func() {
			return s.watchCredential(keyID, expires, demotions, cancel)
		},
		ReserveInterpreter: func(account string) (func(), error) {
			return s.held.Reserve(account, hold.Interpreter, "code cell", e2bHeldHint)
		},
		ReserveFileOp: func(account, op string, heldOutput int64) (func(), error) {
			return s.held.Reserve(account, hold.Answer(heldOutput), "file operation "+op, e2bFileOpHint)
		},
	})
	return err
}
