package secrets

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// tokenRE is a reference to a secret in a brokered request.
var tokenRE = regexp.MustCompile(`\{\{secret:([A-Za-z0-9_.-]{1,200})\}\}`)

// methodRE is an HTTP method token.
var methodRE = regexp.MustCompile("^[A-Z]{1,10}$")

// dropHeaders are request headers the broker sets itself.
// Accept-Encoding among them: the broker's client asks for gzip itself and
// decompresses, so an echo in a compressed answer is redacted too.
var dropHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer", "Keep-Alive", "Proxy-Connection", "Accept-Encoding"}

// Use is what a brokered request used, for the audit log: names, never values.
type Use struct {
	Method  string
	Host    string
	Path    string // the URL's path as sent, secrets replaced by their {{secret:NAME}}
	Secrets []string
	Status  int // the destination's answer; 0 when there was none
}

// reference returns the secret names tokens in s refer to.
func references(s string) []string {
	var out []string
	for _, m := range tokenRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Do makes req on behalf of the account's sandbox: every {{secret:NAME}}
// in the URL, a header value or the body is replaced by the value of
// secret NAME, which the sandbox must have been granted; a request that
// uses a secret must be to an https URL on port 443; the destination
// must be one of the allowed hosts of every secret used (of one of the
// sandbox's secrets when it uses none) and resolve to public addresses
// only; the connection goes to the address checked, redirects are not
// followed, and any echo of a used value in the answer is redacted. The
// returned Use is filled as far as the request got, also on error.
func (s *Service) Do(ctx context.Context, accountID, sandboxID string, req api.HTTPRequest) (*api.HTTPResponse, Use, error) {
	use := Use{}
	if err := s.ready(); err != nil {
		return nil, use, err
	}
	tmpl, timeout, err := checkRequest(&req)
	if err != nil {
		return nil, use, err
	}
	use.Method, use.Host, use.Path = req.Method, hostOf(tmpl.Host), tmpl.EscapedPath()
	names := references(req.URL + "\n" + req.Body)
	for _, v := range req.Headers {
		names = append(names, references(v)...)
	}
	names = dedupe(names)
	used, hosts, err := s.secretsFor(ctx, accountID, sandboxID, names)
	if err != nil {
		return nil, use, err
	}
	use.Secrets = names
	if len(names) > 0 {
		if err := httpsOnly(tmpl); err != nil {
			return nil, use, err
		}
	}
	if !slices.Contains(hosts, use.Host) {
		return nil, use, notAllowed(fmt.Sprintf("%s is not an allowed host of the secrets this request uses", use.Host),
			"add the host to the secret's allowed_hosts (`boxkite secrets set NAME --allowed-host HOST`)")
	}
	addrs, why, err := s.resolve(ctx, use.Host)
	if err != nil {
		return nil, use, upstreamFailed(use.Host, "its name does not resolve")
	}
	if why != "" {
		return nil, use, notAllowed(fmt.Sprintf("%s resolves to %s", use.Host, why),
			"the broker never connects to private, loopback, link-local or metadata addresses")
	}
	values := map[string]string{}
	for _, r := range used {
		v, err := s.keys.open(r)
		if err != nil {
			return nil, use, fmt.Errorf("open secret for request: %w", err)
		}
		values[r.Name] = string(v)
	}
	red := newRedactor(values)
	hreq, err := buildRequest(ctx, req, values)
	if err != nil {
		return nil, use, err
	}
	if hostOf(hreq.URL.Host) != use.Host {
		return nil, use, api.Invalid("url", "a secret may not change the URL's host", "keep {{secret:NAME}} out of the host")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := s.client(addrs, hreq.URL).Do(hreq.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, use, api.Errorf(http.StatusGatewayTimeout, api.CodeUpstreamTimeout, "%s did not answer within %v", use.Host, timeout).
				WithHint("retry, or raise timeout (at most 60 s)")
		}
		s.log.WarnContext(ctx, "brokered request failed", "host", use.Host, "err", red.apply(unwrapURL(err)))
		return nil, use, upstreamFailed(use.Host, "the connection failed")
	}
	defer resp.Body.Close()
	use.Status = resp.StatusCode
	out, err := readAnswer(resp, red, names, use.Host)
	if err != nil {
		return nil, use, err
	}
	if len(names) > 0 {
		if err := s.store.TouchSecrets(context.WithoutCancel(ctx), accountID, names, s.now()); err != nil {
			s.log.WarnContext(ctx, "record secret use", "err", err)
		}
	}
	return out, use, nil
}

// readAnswer reads the upstream's answer, its body bounded and its body
// and headers with every echo of a used value redacted.
func readAnswer(resp *http.Response, red Redactor, names []string, host string) (*api.HTTPResponse, error) {
	// Read past the limit by the longest form a value is redacted in, and
	// redact before cutting: a value that straddles the limit is replaced
	// whole, not cut into a prefix the redactor no longer recognises.
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(api.MaxHTTPResponseBody+red.longest+1)))
	if err != nil && len(body) == 0 {
		return nil, upstreamFailed(host, "its answer broke off")
	}
	out := &api.HTTPResponse{StatusCode: resp.StatusCode, Headers: map[string]string{}, SecretsUsed: append([]string{}, names...)}
	over := len(body) > api.MaxHTTPResponseBody
	out.Body = red.apply(string(body))
	if over {
		out.Body, out.Truncated = cutUTF8(out.Body, api.MaxHTTPResponseBody), true
	}
	for k, vs := range resp.Header {
		// The name too: a destination may echo a request's header as a
		// header of its own named after its value.
		k = red.apply(k)
		if v, ok := out.Headers[k]; ok {
			vs = append([]string{v}, vs...)
		}
		out.Headers[k] = red.apply(strings.Join(vs, ", "))
	}
	return out, nil
}

// cutUTF8 returns s cut to at most n bytes, not inside a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// checkRequest validates req (filling its defaults) and returns its URL
// as written, with secrets not yet substituted, and its timeout.
func checkRequest(req *api.HTTPRequest) (*url.URL, time.Duration, error) {
	req.Method = strings.ToUpper(req.Method)
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	if !methodRE.MatchString(req.Method) {
		return nil, 0, api.Invalid("method", "method must be an HTTP method of at most 10 letters", "")
	}
	if req.Timeout == 0 {
		req.Timeout = api.DefaultHTTPRequestTimeout
	}
	if req.Timeout < 1 || req.Timeout > api.MaxHTTPRequestTimeout {
		return nil, 0, api.Invalid("timeout", fmt.Sprintf("timeout must be 1 to %d seconds", api.MaxHTTPRequestTimeout), "")
	}
	if req.URL == "" || len(req.URL) > api.MaxHTTPRequestURL {
		return nil, 0, api.Invalid("url", fmt.Sprintf("url must be 1 to %d characters", api.MaxHTTPRequestURL), "")
	}
	if len(req.Body) > api.MaxHTTPRequestBody {
		return nil, 0, api.Invalid("body", "body is larger than 10 MiB", "")
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, 0, api.Invalid("url", "url must be an absolute http or https URL without user information", "")
	}
	if strings.Contains(u.Host, "{{") || hostOf(u.Host) == "" {
		return nil, 0, api.Invalid("url", "url's host must be a host name or address, without {{secret:…}}", "")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, 0, api.Invalid("url", "url's port must be 1 to 65535", "")
		}
	}
	for k := range req.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return nil, 0, api.Invalid("headers", fmt.Sprintf("header name %q is not valid", k), "")
		}
		if strings.ContainsAny(req.Headers[k], "\r\n") {
			return nil, 0, api.Invalid("headers", fmt.Sprintf("header %s has a line break", k), "")
		}
	}
	return u, time.Duration(req.Timeout) * time.Second, nil
}

// httpsOnly refuses a URL a secret may not be sent to: one that is not
// https on port 443 (written or implied). A secret travels encrypted, and
// only to its hosts' HTTPS service, never to another port they open.
func httpsOnly(u *url.URL) error {
	port := u.Port()
	if u.Scheme == "https" && (port == "" || port == "443") {
		return nil
	}
	if port == "" {
		port = "80"
	}
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return api.Errorf(http.StatusForbidden, api.CodeSecretRequiresHTTPS, "a secret is sent only over https to port 443, and this URL is %s on port %s", u.Scheme, port).
		WithHint("send it to https://" + host + "/… (port 443), or drop {{secret:NAME}} from the request")
}

// secretsFor loads the secrets names refers to, each granted to the
// sandbox, and returns them with the hosts a request may go to: those all
// of them allow, or, when names is empty, those any of the sandbox's
// secrets allows.
func (s *Service) secretsFor(ctx context.Context, accountID, sandboxID string, names []string) ([]*Record, []string, error) {
	granted, err := s.store.SandboxSecretNames(ctx, sandboxID)
	if err != nil {
		return nil, nil, fmt.Errorf("load sandbox secrets: %w", err)
	}
	all, err := s.store.Secrets(ctx, accountID)
	if err != nil {
		return nil, nil, fmt.Errorf("list secrets: %w", err)
	}
	byName := map[string]*Record{}
	for _, r := range all {
		if slices.Contains(granted, r.Name) {
			byName[r.Name] = r
		}
	}
	if len(names) == 0 {
		var hosts []string
		for _, r := range byName {
			hosts = append(hosts, r.AllowedHosts...)
		}
		if len(hosts) == 0 {
			return nil, nil, notAllowed("this sandbox has no secrets, so the broker has no host to send its requests to",
				"create the sandbox with --secret NAME; the request may go to that secret's allowed hosts")
		}
		return nil, hosts, nil
	}
	var used []*Record
	var hosts []string
	for i, n := range names {
		r, ok := byName[n]
		if !ok {
			return nil, nil, api.Errorf(http.StatusNotFound, api.CodeSecretNotReferenced, "secret %q is not one of this sandbox's secrets", n).
				WithHint("create the sandbox with --secret " + n + " (secret_names); `boxkite secrets ls` lists the account's secrets")
		}
		used = append(used, r)
		if i == 0 {
			hosts = slices.Clone(r.AllowedHosts)
		} else {
			hosts = slices.DeleteFunc(hosts, func(h string) bool { return !slices.Contains(r.AllowedHosts, h) })
		}
	}
	return used, hosts, nil
}

// buildRequest substitutes the values into req and returns the request
// to send.
func buildRequest(ctx context.Context, req api.HTTPRequest, values map[string]string) (*http.Request, error) {
	sub := func(s string) string {
		return tokenRE.ReplaceAllStringFunc(s, func(m string) string { return values[tokenRE.FindStringSubmatch(m)[1]] })
	}
	var body io.Reader
	if req.Body != "" {
		body = strings.NewReader(sub(req.Body))
	}
	// Only the path and query may hold a secret: substitute there, so a
	// value with URL syntax in it cannot change the host.
	u, _ := url.Parse(req.URL) // checked by checkRequest
	// (The scheme as written may be in capitals: url.Parse lowered it.)
	origin, rest := u.Scheme+"://"+u.Host, req.URL
	if len(rest) >= len(origin) && strings.EqualFold(rest[:len(origin)], origin) {
		rest = rest[len(origin):]
	}
	raw := origin + sub(rest)
	hreq, err := http.NewRequestWithContext(ctx, req.Method, raw, body)
	if err != nil {
		return nil, api.Invalid("url", "url is not valid once its secrets are filled in", "")
	}
	for k, v := range req.Headers {
		if slices.ContainsFunc(dropHeaders, func(d string) bool { return strings.EqualFold(d, k) }) {
			continue
		}
		hreq.Header.Set(k, sub(v))
	}
	if hreq.Header.Get("User-Agent") == "" {
		hreq.Header.Set("User-Agent", "boxkite-secrets-broker")
	}
	return hreq, nil
}

// client returns an HTTP client that connects only to addrs (the checked
// addresses of u's host), whatever the name resolves to by then, with TLS
// verified for the name; it follows no redirects and uses no proxy.
func (s *Service) client(addrs []netip.Addr, u *url.URL) *http.Client {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var errs []error
			for _, a := range addrs {
				c, err := s.dial(ctx, network, net.JoinHostPort(a.String(), port))
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, errors.Join(errs...)
		},
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.roots},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 0,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// unwrapURL returns the text of err without a *url.Error's URL, which
// holds the secrets filled in.
func unwrapURL(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

func notAllowed(msg, hint string) *api.Error {
	return &api.Error{Status: http.StatusForbidden, Code: api.CodeDestinationNotAllowed, Message: msg, Hint: hint}
}

func upstreamFailed(host, why string) *api.Error {
	return api.Errorf(http.StatusBadGateway, api.CodeUpstreamFailed, "could not reach %s: %s", host, why).
		WithHint("check the host and retry; the server log has the cause under this request id")
}
