// Package console serves boxkite's web console at /ui/ (docs/console.md):
// a page in the browser that lists, creates and destroys sandboxes, shows
// a sandbox's files, processes and live audit log, and opens its terminal.
//
// The console is a client of the API like the CLI, living on the same
// listener. It adds no API of its own: the browser calls /ui/api/v1/…,
// which is the API's /v1/… with the session's API key put in the
// Authorization header (apiproxy.go), so every action goes through the
// API's routes, guard and authorization. What the console adds is the
// plumbing of a browser session (session.go): sign-in with email and
// password or a one-time link, an HttpOnly SameSite cookie that holds an
// API key minted for the session and revoked at sign-out, and a CSRF
// token. Its page and assets are embedded (assets.go): web/ builds them
// with npm into dist/, which is committed, so building boxkite needs no
// node.
package console

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
)

// Defaults of Config.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultLinkTTL    = 2 * time.Minute
)

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// Config holds a console's settings.
type Config struct {
	// API serves the control plane's API (the server's handler); every
	// request the console makes, its own and the browser's, goes through it.
	API http.Handler
	// Log gets what fails inside the console; nil means slog.Default().
	Log *slog.Logger
	// SessionTTL is how long a sign-in lasts; default 12 h.
	SessionTTL time.Duration
	// LinkTTL is how long a one-time sign-in link may wait to be opened;
	// default 2 minutes.
	LinkTTL time.Duration
	// LinkKey returns the key one-time links are sealed with (links.go),
	// the same on every server sharing the database, so that a link
	// minted by one opens on any (server.(*Server).ConsoleLinkKey); nil
	// means a random key of this console's, whose links open only here.
	LinkKey func(context.Context) ([]byte, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Console is the web console, an http.Handler for the paths under Prefix.
type Console struct {
	cfg    Config
	log    *slog.Logger
	mux    *http.ServeMux
	assets *assets
}

// New returns the console of cfg.API.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil {
		return nil, errors.New("console: an API handler is required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = DefaultLinkTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	as, err := loadAssets()
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if cfg.LinkKey == nil {
		key := make([]byte, linkKeySize)
		_, _ = rand.Read(key) // crypto/rand.Read never fails
		cfg.LinkKey = func(context.Context) ([]byte, error) { return key, nil }
	}
	c := &Console{cfg: cfg, log: log, mux: http.NewServeMux(), assets: as}
	c.routes()
	return c, nil
}

// ServeHTTP serves the console's paths with its security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Request-ID", apihttp.RequestID(r))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// The page sets its own policy (assets.go); everything else is data.
	h.Set("Content-Security-Policy", dataCSP)
	if strings.HasPrefix(r.URL.Path, apiPrefix) {
		c.handler(c.proxyAPI).ServeHTTP(w, r) // any method: the API's routes decide
		return
	}
	c.mux.ServeHTTP(w, r)
}

// dataCSP is the policy of every console answer that is not the page: it
// runs nothing and, if opened in a tab, is its own sandboxed origin.
const dataCSP = "default-src 'none'; sandbox; frame-ancestors 'none'"

// handler adapts an error-returning handler: an *api.Error goes out in the
// API's envelope; anything else is logged and becomes a bare 500.
func (c *Console) handler(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			c.writeError(w, r, err)
		}
	})
}

func (c *Console) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae, ok := errors.AsType[*api.Error](err)
	if !ok {
		c.log.ErrorContext(r.Context(), "console", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &api.Error{
			Code: api.CodeInternal, Message: "internal server error",
			Hint: "retry; if it keeps failing, report the request id to the operator",
		}
	}
	e := *ae
	if e.Status == 0 {
		e.Status = api.StatusOf(e.Code)
	}
	e.RequestID = w.Header().Get("X-Request-ID")
	writeJSON(w, e.Status, api.ErrorEnvelope{Error: &e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"code":"internal_error","message":"encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// sameOrigin reports whether r's Origin header, if it has one, names the
// origin r was sent to. want says whether the header must be there.
func sameOrigin(r *http.Request, want bool) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return !want
	}
	scheme := "http"
	if isTLS(r) {
		scheme = "https"
	}
	return strings.EqualFold(o, scheme+"://"+r.Host)
}

// isTLS reports whether the browser reached r over TLS: directly, or
// through a proxy in front that says so.
func isTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

var errCrossOrigin = api.Errorf(http.StatusForbidden, api.CodeForbidden, "cross-origin request refused").
	WithHint("the console's API answers its own page only")
