package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/internal/apihttp"

	"golang.org/x/net/http/httpguts"

	"github.com/boxkite/boxkite/client/api"
)

// apiPath returns the API path a /ui/api/ path stands for: /ui/api/v1/…
// is /v1/…; anything else is not the console's to pass on.
func apiPath(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/ui/api")
	if !ok || !strings.HasPrefix(rest, "/v1/") {
		return "", false
	}
	return rest, true
}

// proxyAPI serves /ui/api/v1/…: the same request, to the API's /v1/…, with
// the session's key as its credential. State-changing requests must carry
// the CSRF token; WebSocket handshakes (which cannot) must come from the
// console's own origin. The cookie and the token never reach the API.
func (c *Console) proxyAPI(w http.ResponseWriter, r *http.Request) error {
	path, ok := apiPath(r.URL.Path)
	if !ok {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "no such console route").
			WithHint("the console passes /ui/api/v1/… on to the API's /v1/…")
	}
	if to, ok := cleanRedirect(r.URL); ok {
		// The API's mux would redirect to the clean /v1/… path, out of
		// the console (where the cookie is not sent); stay in it.
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		return nil
	}
	s, ok := sessionFrom(r)
	if !ok {
		return errSignedOut
	}
	switch {
	case isWebSocket(r):
		if !sameOrigin(r, true) {
			return errCrossOrigin
		}
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		if err := checkCSRF(r, s); err != nil {
			return err
		}
	}
	// A stream cut by the key's revocation or expiry (sign-out elsewhere,
	// the session's end) tells the browser user to sign in again, not
	// to run the CLI's commands.
	in := r.Clone(apihttp.WithReauthHint(r.Context(), consoleKeyHint))
	in.URL.Path = path
	in.URL.RawPath = ""
	if raw, ok := apiPath(r.URL.RawPath); ok {
		in.URL.RawPath = raw
	}
	q := in.URL.Query()
	if q.Has("api_key") {
		q.Del("api_key") // the session's key is the only credential
		in.URL.RawQuery = q.Encode()
	}
	in.RequestURI = in.URL.RequestURI()
	in.Header.Del("Cookie")
	in.Header.Del(CSRFHeader)
	in.Header.Set("Authorization", s.auth())
	if id := w.Header().Get("X-Request-ID"); id != "" {
		in.Header.Set("X-Request-ID", id)
	}
	dw := &dataWriter{ResponseWriter: w}
	c.cfg.API.ServeHTTP(dw, in)
	dw.finish()
	return nil
}

// isWebSocket reports whether r is a WebSocket handshake as the API's
// WebSocket library reads one: "websocket" among the tokens of its Upgrade
// headers, in any case ("websocket, foo/1" included), so that no spelling
// of the handshake the API would accept skips the origin check.
func isWebSocket(r *http.Request) bool {
	return httpguts.HeaderValuesContainsToken(r.Header["Upgrade"], "websocket")
}

// dataWriter keeps the console's data policy on an API answer (the API
// sets a looser one of its own): a file downloaded from a sandbox and
// opened in a tab runs nothing, on an origin of its own. It holds back a
// 401 in JSON until the API is done (finish), to give an invalid_api_key
// the console's hint.
type dataWriter struct {
	http.ResponseWriter
	wrote bool
	held  *bytes.Buffer // the body of a 401 being held back
}

func (d *dataWriter) WriteHeader(code int) {
	if d.wrote {
		d.ResponseWriter.WriteHeader(code) // net/http logs the superfluous call
		return
	}
	d.wrote = true
	h := d.Header()
	h.Set("Content-Security-Policy", dataCSP)
	if code == http.StatusUnauthorized && strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		d.held = new(bytes.Buffer)
		return
	}
	d.ResponseWriter.WriteHeader(code)
}

func (d *dataWriter) Write(p []byte) (int, error) {
	if !d.wrote {
		d.WriteHeader(http.StatusOK)
	}
	if d.held != nil {
		if d.held.Len()+len(p) <= maxHeld {
			return d.held.Write(p)
		}
		// Not an error envelope: let it through as written.
		held := d.held.Bytes()
		d.held = nil
		d.ResponseWriter.WriteHeader(http.StatusUnauthorized)
		if _, err := d.ResponseWriter.Write(held); err != nil {
			return 0, err
		}
	}
	return d.ResponseWriter.Write(p)
}

// FlushError flushes, except a 401 being held back (it is sent whole by
// finish).
func (d *dataWriter) FlushError() error {
	if d.held != nil {
		return nil
	}
	return http.NewResponseController(d.ResponseWriter).Flush()
}

// finish sends a 401 held back: an invalid_api_key with the console's
// hint, anything else as the API wrote it.
func (d *dataWriter) finish() {
	if d.held == nil {
		return
	}
	body := d.held.Bytes()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // details as the API wrote them
	var env api.ErrorEnvelope
	if dec.Decode(&env) == nil && env.Error != nil && env.Error.Code == api.CodeInvalidAPIKey {
		env.Error.Hint = consoleKeyHint
		if b, err := json.Marshal(env); err == nil {
			body = append(b, '\n')
			d.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
	}
	d.ResponseWriter.WriteHeader(http.StatusUnauthorized)
	_, _ = d.ResponseWriter.Write(body)
}

// maxHeld bounds the 401 answer dataWriter holds back (an error envelope
// is a few hundred bytes).
const maxHeld = 64 << 10

// Unwrap lets http.ResponseController reach the connection (the
// WebSocket hijack).
func (d *dataWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// cleanRedirect is where a console API path that is not clean (an empty
// element, "." or "..", as the escaped path spells it: what the API's mux
// looks at) goes instead: its clean form, still under /ui/api/, with the
// query. ok is false for a clean path.
func cleanRedirect(u *url.URL) (string, bool) {
	p := u.EscapedPath()
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	if clean == p {
		return "", false
	}
	if !strings.HasPrefix(clean, "/ui/api/") {
		clean = "/ui/api/"
	}
	if u.RawQuery != "" {
		clean += "?" + u.RawQuery
	}
	return clean, true
}

// consoleKeyHint replaces the hint of the API's 401 invalid_api_key: the
// key is the session's, which the person never saw; what they can do is
// sign in again.
const consoleKeyHint = "your console session has ended (signed out elsewhere, its key revoked or expired): sign in again at /ui/"
