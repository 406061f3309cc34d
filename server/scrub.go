package server

import (
	"net/http"

	"github.com/boxkite/boxkite/server/internal/authz"
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
	return &scrub.Exec{Idle: s.scrubIdle}
}

// routeScrubber wraps w for a proxied route whose answer carries command
// output (proxyRoute.scrub), when r's account scrubs it. finish passes on
// what is held; call it once the answer is complete.
func (s *Server) routeScrubber(rt proxyRoute, r *http.Request, w http.ResponseWriter) (http.ResponseWriter, func()) {
	if rt.flags&(scrubsProcessStream|scrubsProcessOutput|scrubsInterpreter) == 0 || !scrubsOutput(r) {
		return w, func() {}
	}
	switch {
	case rt.flags&scrubsProcessStream != 0:
		ss := scrub.NewSSE(w, s.scrubIdle)
		return ss, func() { ss.FlushHeld(); ss.Stop() }
	case rt.flags&scrubsInterpreter != 0:
		j := scrub.NewJSONRewriter(w, scrub.InterpreterResult)
		return j, j.Finish
	}
	j := scrub.NewJSONRewriter(w, scrub.ProcessOutput)
	return j, j.Finish
}
