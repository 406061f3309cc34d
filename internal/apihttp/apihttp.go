// Package apihttp is the HTTP plumbing the control plane (server) and the
// sidecar share, so that both refuse a malformed request alike, with the
// same status and the same error envelope:
//
//   - Listener and TLSListener turn the refusals net/http writes by itself,
//     before any handler runs (unparsable requests, headers past
//     MaxHeaderBytes, TLS sent to a plain port and the reverse), into the
//     envelope instead of plain text;
//   - BodyTimeouts bounds how long a request body may take to arrive,
//     per request, so long responses (exec streams, downloads) and long
//     uploads are not cut the way http.Server.ReadTimeout would cut them;
//   - ReadJSON and DecodeJSON read JSON bodies by one set of rules (413,
//     415, 400 for bytes that are not JSON or not UTF-8, 422 for a field of
//     the wrong type, 408 for a body too slow);
//   - MethodNotAllowed answers a path served under other methods with 405
//     and Allow, where a mux with a catch-all route would say 404;
//   - for the control plane, which keeps what a request names in a
//     database, DecodeText (CheckText) refuses a NUL character in a JSON
//     body's text, naming the field, and CheckPathValues an {id} in the
//     path with a NUL or bytes that are not UTF-8.
//
// docs/errors.md lists every status and code.
package apihttp

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// Limits and timeouts of NewServer.
const (
	// HeaderTimeout bounds the arrival of a request's header block.
	HeaderTimeout = 10 * time.Second
	// IdleTimeout closes a kept-alive connection no request came on for
	// this long.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's header block (net/http allows 4 KiB
	// of slack on top); past it the answer is 431 headers_too_large.
	MaxHeaderBytes = 64 << 10
)

// NewServer returns an http.Server for one of the APIs: h, the header
// and idle timeouts and the header limit above, and net/http's own log
// lines sent to log at Warn. Serve it on Listener or TLSListener. It sets
// no ReadTimeout: that one deadline would also cut exec streams and long
// uploads; BodyTimeouts bounds request bodies per request instead.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: HeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// validRequestID accepts ids a proxy or client may send (1 to 128 of
// A-Z a-z 0-9 . _ : -); anything else is replaced, so a header cannot
// inject text into logs. A loop, not a regexp: the sidecar imports this
// package, and compiling `{1,128}` at init cost every jail's start ~50
// page faults and a stack growth (issue 27).
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := range len(id) {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// RequestID returns the request's X-Request-ID if it is acceptable, or a
// new random id.
func RequestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-ID"); validRequestID(id) {
		return id
	}
	return NewRequestID()
}

// NewRequestID returns a random request id: 32 hex digits.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
