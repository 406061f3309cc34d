package preview

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// labelRE is the first label of a host-based preview: <port>-<sandbox id>.
var labelRE = regexp.MustCompile(`^([0-9]{1,5})-([a-z0-9][a-z0-9-]{0,57})$`)

// idRE is a sandbox id as a preview URL may name it.
var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// e2bPorts are E2B's own ports (envd, the code interpreter): their
// <port>-<id> hosts belong to the E2B facade (server/e2b), never to a
// preview.
var e2bPorts = map[int]bool{49983: true, 49999: true}

// egressPort is the port of the sandbox's egress proxy
// (sidecar.EgressProxyAddr), which the sidecar never proxies a preview to.
const egressPort = 3128

// PathPrefix starts every path-form preview URL.
const PathPrefix = "/preview/"

// target is the sandbox port a preview request names, and the rest of its
// path; cookiePath scopes the cookie the token is exchanged for.
type target struct {
	sandboxID  string
	port       int
	rest       string // escaped, starting with "/"
	cookiePath string
	host       string // the request's Host (the path form's)
}

// Matches reports whether r is for a host-based preview: its Host is
// <port>-<sandbox id>.<preview domain>. Path-form requests come through
// the route /preview/{id}/{port}/.
func (s *Service) Matches(r *http.Request) bool {
	_, ok := s.hostTarget(r)
	return ok
}

func (s *Service) hostTarget(r *http.Request) (target, bool) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	label, ok := strings.CutSuffix(host, "."+s.domain())
	if !ok {
		return target{}, false
	}
	m := labelRE.FindStringSubmatch(label)
	if m == nil {
		return target{}, false
	}
	port, err := parsePort(m[1])
	if err != nil || e2bPorts[port] {
		return target{}, false
	}
	rest := r.URL.EscapedPath()
	if !strings.HasPrefix(rest, "/") {
		rest = "/" + rest
	}
	return target{sandboxID: m[2], port: port, rest: rest, cookiePath: "/"}, true
}

func pathTarget(r *http.Request) (target, error) {
	p := r.URL.EscapedPath()
	rest, _ := strings.CutPrefix(p, PathPrefix)
	id, rest, _ := strings.Cut(rest, "/")
	portS, rest, found := strings.Cut(rest, "/")
	port, err := parsePort(portS)
	if err != nil || !idRE.MatchString(id) {
		return target{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "not a preview URL").
			WithHint("preview URLs are /preview/<sandbox id>/<port>/; create one with `boxkite preview PORT`")
	}
	if !found {
		return target{}, errRedirectSlash
	}
	return target{sandboxID: id, port: port, rest: "/" + rest, cookiePath: PathPrefix + id + "/" + portS + "/", host: r.Host}, nil
}

var errRedirectSlash = fmt.Errorf("redirect to the trailing slash")

// ServeHTTP serves a host-based preview request (Matches).
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, ok := s.hostTarget(r)
	if !ok {
		httpx.WriteError(s.log, w, r, api.Errorf(http.StatusNotFound, api.CodeNotFound, "not a preview host"))
		return
	}
	if err := s.serve(w, r, t); err != nil {
		httpx.WriteError(s.log, w, r, err)
	}
}

// ServePath serves the path form, /preview/{id}/{port}/{path...}.
func (s *Service) ServePath(w http.ResponseWriter, r *http.Request) error {
	t, err := pathTarget(r)
	if err == errRedirectSlash {
		u := *r.URL
		u.Path += "/"
		u.RawPath = ""
		http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
		return nil
	}
	if err != nil {
		return err
	}
	// The path form is served on the API's origin, the web console's
	// too: the app's pages run in an opaque origin of their own, so their
	// scripts cannot read the console's pages or use its session. (Its
	// sub-resources then go without the preview's cookie: in a browser,
	// use the host form, an origin of its own.)
	w.Header().Set("Content-Security-Policy", pathFormCSP)
	return s.serve(w, r, t)
}

// pathFormCSP sandboxes a path-form preview's pages: scripts, forms and
// pop-ups run, but never in the server's origin (no allow-same-origin).
const pathFormCSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads; frame-ancestors 'none'"

func unauthorized() *api.Error {
	return api.Errorf(http.StatusUnauthorized, api.CodePreviewUnauthorized, "this preview URL has no valid token: it expired, was revoked, or is another preview's").
		WithHint("create a new one with `boxkite preview PORT` (POST /v1/sandboxes/{id}/preview/{port})")
}

// serve checks the token (the query parameter, exchanged for a cookie, or
// the cookie), the rate limits, and proxies to the sandbox's sidecar.
func (s *Service) serve(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	token := q.Get(api.PreviewTokenParam)
	fromQuery := token != ""
	candidates := []string{token}
	if !fromQuery {
		// Every boxkite_preview cookie the browser sent, not only the
		// first: a page under the same parent domain (another preview's
		// script, on the preview domain) can set one of that name with a
		// longer path, which browsers send first, to lock a tenant out.
		candidates = candidates[:0]
		for _, c := range r.CookiesNamed(api.PreviewCookie) {
			if len(candidates) == maxPreviewCookies {
				break
			}
			candidates = append(candidates, c.Value)
		}
	}
	var rec *Record
	for _, tok := range candidates {
		got, err := s.lookup(r.Context(), tok)
		if err != nil {
			return err
		}
		if got != nil && got.SandboxID == t.sandboxID && got.Port == t.port {
			rec, token = got, tok
			break
		}
	}
	if rec == nil {
		return unauthorized()
	}
	if fromQuery {
		http.SetCookie(w, &http.Cookie{
			Name: api.PreviewCookie, Value: token, Path: t.cookiePath, Expires: rec.ExpiresAt,
			HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil,
		})
		q.Del(api.PreviewTokenParam)
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !wantsUpgrade(r) {
			// The token leaves the address bar (and Referer) at once. Not
			// from a WebSocket handshake: no WebSocket client follows a
			// redirect, and none has an address bar; it is proxied with
			// the token taken out, like any other request.
			u := *r.URL
			u.RawQuery = q.Encode()
			u.Scheme, u.Host = "", ""
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return nil
		}
	}
	if err := s.limit.allow(rec, s.cfg.PerSandbox, s.cfg.PerAccount); err != nil {
		return err
	}
	rt, err := s.cp.Sidecar(r.Context(), rec.AccountID, rec.SandboxID)
	if err != nil {
		return err
	}
	s.count(rec)
	ctx, done := s.hold(r.Context(), rec, token)
	defer done()
	s.proxy(rt, t, q).ServeHTTP(w, r.WithContext(ctx))
	return nil
}

// maxPreviewCookies bounds the boxkite_preview cookies of one request
// that are looked up.
const maxPreviewCookies = 4

// proxy returns the reverse proxy of one request: to the sidecar's
// /preview/{port}/ with the token taken out of the query and the cookies.
func (s *Service) proxy(rt http.RoundTripper, t target, q url.Values) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Transport:     rt,
		FlushInterval: -1, // streams (SSE, long polls) pass as they come
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := &url.URL{Scheme: "http", Host: "sidecar", RawQuery: q.Encode()}
			rawPath := "/preview/" + strconv.Itoa(t.port) + t.rest
			if p, err := url.PathUnescape(rawPath); err == nil {
				u.Path, u.RawPath = p, rawPath
			}
			pr.Out.URL = u
			pr.Out.Host = "sidecar"
			stripCookie(pr.Out.Header)
			keepForwarded(pr.Out.Header)
			if info := httpx.InfoFrom(pr.In.Context()); info != nil {
				pr.Out.Header.Set("X-Request-ID", info.ID) // the sidecar's log line under the server's id
			}
			pr.SetXForwarded()
			pr.Out.Header.Set("X-Forwarded-Host", pr.In.Host)
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Del(api.HeaderSidecarToken)
			scopeSetCookies(resp.Header, t.cookiePath)
			dropOriginWide(resp.Header)
			if t.cookiePath != "/" { // the path form, on the API's origin
				scopeLocation(resp.Header, t.cookiePath, t.cookiePath+strings.TrimPrefix(t.rest, "/"), t.host)
			}
			// The sidecar's own headers, which the server has set already:
			// the app's answer gets them once.
			if id := resp.Header.Get("X-Request-Id"); id != "" && id == resp.Request.Header.Get("X-Request-ID") {
				resp.Header.Del("X-Request-Id")
			}
			if resp.Header.Get("X-Content-Type-Options") == "nosniff" {
				resp.Header.Del("X-Content-Type-Options")
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.WarnContext(r.Context(), "preview proxy", "sandbox", t.sandboxID, "port", t.port, "err", err)
			httpx.WriteError(s.log, w, r, api.Errorf(http.StatusBadGateway, api.CodePreviewUnreachable, "could not reach port %d in the sandbox", t.port).
				WithHint("start the app so it listens on that port (on 127.0.0.1 or 0.0.0.0) inside the sandbox"))
		},
	}
}

// forwarded are the request headers an app in a sandbox gets: the
// reference's allowlist, with the conditional and content headers, the
// WebSocket handshake's, the browser's Sec-Fetch-* and client hints, and
// the CSRF headers web frameworks send with their own requests. Anything
// else stays with the server — Authorization and X-Api-Key among them,
// which a client configured for the API may send along with a boxkite key.
var forwarded = map[string]bool{
	"Accept": true, "Accept-Encoding": true, "Accept-Language": true, "Cache-Control": true, "Pragma": true,
	"Content-Type": true, "Content-Length": true, "Content-Encoding": true, "Content-Language": true,
	"Cookie": true, "User-Agent": true, "Referer": true, "Origin": true, "Range": true, "If-Range": true,
	"If-None-Match": true, "If-Match": true, "If-Modified-Since": true, "If-Unmodified-Since": true,
	"Connection": true, "Upgrade": true, "Te": true,
	"X-Requested-With": true, "X-Csrf-Token": true, "X-Csrftoken": true, "X-Xsrf-Token": true,
}

// keepForwarded deletes from h what forwarded does not name.
func keepForwarded(h http.Header) {
	for k := range h {
		if !forwarded[k] && !strings.HasPrefix(k, "Sec-Websocket-") && !strings.HasPrefix(k, "Sec-Fetch-") && !strings.HasPrefix(k, "Sec-Ch-") {
			delete(h, k)
		}
	}
}

// stripCookie removes the preview cookie from h's Cookie headers: the app
// never sees the token.
func stripCookie(h http.Header) {
	var keep []string
	for _, line := range h.Values("Cookie") {
		var parts []string
		for p := range strings.SplitSeq(line, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(p), "=")
			if name != api.PreviewCookie && strings.TrimSpace(p) != "" {
				parts = append(parts, strings.TrimSpace(p))
			}
		}
		if len(parts) > 0 {
			keep = append(keep, strings.Join(parts, "; "))
		}
	}
	h.Del("Cookie")
	for _, k := range keep {
		h.Add("Cookie", k)
	}
}

// limiter counts proxied requests per sandbox and per account in fixed
// one-minute windows, in memory.
type limiter struct {
	now    func() time.Time
	mu     sync.Mutex
	window time.Time
	counts map[string]int
}

func newLimiter(now func() time.Time) *limiter { return &limiter{now: now, counts: map[string]int{}} }

func (l *limiter) allow(rec *Record, perSandbox, perAccount int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.now().Truncate(time.Minute)
	if !w.Equal(l.window) {
		l.window, l.counts = w, map[string]int{}
	}
	sk, ak := "s:"+rec.SandboxID, "a:"+rec.AccountID
	if l.counts[sk] >= perSandbox || l.counts[ak] >= perAccount {
		retry := int(w.Add(time.Minute).Sub(l.now()).Seconds()) + 1
		e := api.Errorf(http.StatusTooManyRequests, api.CodeRateLimited, "too many preview requests this minute").
			WithHint(fmt.Sprintf("retry in %d s; a sandbox's previews take %d requests a minute, an account's %d", retry, perSandbox, perAccount))
		e.Details = map[string]int{"retry_after_seconds": retry}
		return e
	}
	l.counts[sk]++
	l.counts[ak]++
	return nil
}

// wantsUpgrade reports whether r asks to switch protocols (a WebSocket
// handshake): it names an Upgrade and its Connection header lists
// "upgrade", read as net/http reads it (httpguts).
func wantsUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade")
}
