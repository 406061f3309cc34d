package apihttp

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/boxkite/boxkite/client/api"
)

// net/http answers some requests itself, before any handler runs, in
// plain text: a request line or header it cannot parse (400, which is
// also what a TLS handshake sent to a plain port gets), a header block
// past MaxHeaderBytes (431), an unknown transfer coding (501), an HTTP
// version it does not speak (505). It writes each such answer to the
// connection in one Write, with a fixed header block that no response of
// a handler has (a handler's response always carries Date). Listener
// recognises those writes and sends the error envelope instead.
//
// What cannot be turned into JSON: a header block that stops arriving
// (HeaderTimeout) and a connection that sends nothing are closed without
// an answer, as net/http does; there is no request to answer.

// stackErrorHeaders is the header block of net/http's own refusals.
const stackErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Listener wraps ln so that net/http's own refusals go out as the error
// envelope.
func Listener(ln net.Listener) net.Listener { return refusalListener{ln} }

type refusalListener struct{ net.Listener }

func (l refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusalConn{Conn: c}, nil
}

// refusalConn rewrites net/http's plain-text refusals; everything else
// passes through.
type refusalConn struct{ net.Conn }

func (c *refusalConn) Write(p []byte) (int, error) {
	status, reason, ok := stackRefusal(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(refusalResponse(status, reason)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadFrom keeps sendfile and splice for response bodies (net/http looks
// for io.ReaderFrom on the connection); its own refusals never use it.
func (c *refusalConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite lets net/http half-close after a 431, so the client reads the
// answer before the connection is reset.
func (c *refusalConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// stackRefusal recognises a refusal net/http wrote by itself: a status
// line of a 4xx or 5xx followed at once by stackErrorHeaders. It returns
// the status and the reason text net/http gave after the status text, if
// any ("missing required Host header").
func stackRefusal(p []byte) (status int, reason string, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found || len(rest) < 4 || rest[3] != ' ' {
		return 0, "", false
	}
	line, _, found := bytes.Cut(rest, []byte(stackErrorHeaders))
	if !found || bytes.Contains(line, []byte("\r\n")) {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	_, text, _ := bytes.Cut(line[4:], []byte(": "))
	return status, string(text), true
}

// refusalResponse is a whole HTTP/1.1 response carrying the envelope for
// one of net/http's own refusals; the connection closes after it.
func refusalResponse(status int, reason string) []byte {
	e := stackError(status, reason)
	e.RequestID = NewRequestID()
	return rawResponse("HTTP/1.1", e)
}

// stackError is the envelope's content for a refusal net/http made.
func stackError(status int, reason string) *api.Error {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return api.Errorf(status, api.CodeHeadersTooLarge, "the request's headers are larger than %s", sizeText(MaxHeaderBytes)).
			WithHint("send fewer or shorter headers")
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		msg := http.StatusText(status)
		if reason != "" {
			msg += ": " + reason
		}
		return api.Errorf(status, api.CodeNotSupported, "%s", msg).WithHint("send an HTTP/1.1 request")
	}
	msg := "malformed HTTP request"
	if reason != "" {
		msg += ": " + reason
	}
	return api.Errorf(status, api.CodeBadRequest, "%s", msg).
		WithHint("send an HTTP/1.1 request; a TLS handshake on a plain HTTP port is not one")
}

// rawResponse renders a complete response for e, for writing straight
// to a connection.
func rawResponse(proto string, e *api.Error) []byte {
	body, _ := json.Marshal(api.ErrorEnvelope{Error: e}) // our own types always encode
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d %s\r\n", proto, e.Status, http.StatusText(e.Status))
	fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	fmt.Fprintf(&b, "X-Request-ID: %s\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n", e.RequestID)
	b.Write(body)
	return b.Bytes()
}

// TLSListener serves TLS with cfg on ln, like tls.NewListener, with
// Listener's envelopes inside TLS, and answers a plain HTTP request sent
// to it with the envelope (400) in plain HTTP, where net/http writes text.
func TLSListener(ln net.Listener, cfg *tls.Config) net.Listener {
	return tlsRefusalListener{ln, cfg}
}

type tlsRefusalListener struct {
	net.Listener
	cfg *tls.Config
}

func (l tlsRefusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := tls.Server(c, l.cfg)
	return &tlsRefusalConn{refusalConn: refusalConn{Conn: tc}, tc: tc}, nil
}

// tlsRefusalConn is a refusalConn over TLS. net/http does the handshake
// itself only for a *tls.Conn, so this one does it on the first read;
// ConnectionState keeps Request.TLS set.
type tlsRefusalConn struct {
	refusalConn
	tc   *tls.Conn
	once sync.Once
	err  error // of the handshake
}

func (c *tlsRefusalConn) Read(p []byte) (int, error) {
	c.once.Do(c.handshake)
	if c.err != nil {
		return 0, c.err
	}
	return c.tc.Read(p)
}

func (c *tlsRefusalConn) handshake() {
	c.err = c.tc.Handshake()
	if re, ok := errors.AsType[tls.RecordHeaderError](c.err); ok && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
		e := api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "plain HTTP sent to a TLS port").
			WithHint("use https://")
		e.RequestID = NewRequestID()
		_, _ = re.Conn.Write(rawResponse("HTTP/1.0", e))
	}
}

// ConnectionState reports the TLS state, for Request.TLS.
func (c *tlsRefusalConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

// looksLikeHTTP reports whether a would-be TLS record header is the start
// of an HTTP request (net/http's own test).
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH":
		return true
	}
	return false
}
