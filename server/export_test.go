package server

import (
	"context"
	"time"
)

// Hooks for the external tests in server_test.

// SetNow replaces the server's clock.
func (s *Server) SetNow(now func() time.Time) { s.now = now }

// SetHealthTimeout changes how long Init waits for sidecars to answer.
func (s *Server) SetHealthTimeout(d time.Duration) { s.healthTimeout = d }

// Reap runs one reaper pass.
func (s *Server) Reap(ctx context.Context) { s.reap(ctx) }
