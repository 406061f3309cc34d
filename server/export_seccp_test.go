package server

import (
	"context"
	"time"
)

// SetScrubIdle changes how long a scrubbed output stream holds back the
// end of its text while nothing new comes.
func (s *Server) SetScrubIdle(d time.Duration) { s.scrubIdle = d }

// RecheckCredentials checks the credentials of requests in flight against
// the store, as a server does when its revocation listener reconnects.
func (s *Server) RecheckCredentials(ctx context.Context) { s.recheckCredentials(ctx) }
