package server

import (
	"net/http"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/hold"
	"github.com/boxkite/boxkite/server/internal/scrub"
)

// Secret scrubbing (issue 17, finding 4): what it covers is in the doc of
// server/internal/scrub; the server decides per request whether output
// is scrubbed (the account may turn it off) and wires the scrubbers in.

// scrubsOutput reports whether command output returned to r's caller is
// scrubbed: unless its account turned that off.
func scrubsOutput(r *http.Request) bool {
	ri := authz.From(r.Context())
	return ri == nil || ri.Account == nil || !ri.Account.KeepOutputSecrets
}

// newExecScrub returns r's exec scrubber, nil when the account keeps
// secrets in its output.
func (s *Server) newExecScrub(r *http.Request) *scrub.Exec {
	if !scrubsOutput(r) {
		return nil
	}
	return &scrub.Exec{Idle: s.scrubIdle, MaxLine: hold.StreamLine}
}
