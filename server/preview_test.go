package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// previewClient is a curl-like client: it keeps cookies and sends every
// request, whatever its host (*.localhost), to the server at addr.
func previewClient(t *testing.T, addr string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}},
	}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func createPreview(t *testing.T, e *env, key, sandboxID string, port, ttl int) api.Preview {
	t.Helper()
	resp, body := e.do("POST", sandboxPath(sandboxID, fmt.Sprintf("/preview/%d", port)), key, api.CreatePreviewRequest{TTLSeconds: ttl})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create preview: %d %s", resp.StatusCode, body)
	}
	var p api.Preview
	mustUnmarshal(t, body, &p)
	return p
}

// TestPreviewURLs: the token is exchanged for a cookie on the first visit
// and taken out of what the app sees; host and path forms reach the
// sandbox's port through its sidecar; revoke and expiry make them 401;
// another sandbox's host is not reached with it; all of it is audited.
func TestPreviewURLs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	var seen []*http.Request
	e.Sidecar.Route("/preview/{port}/{path...}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.HeaderSidecarToken) != e.Sidecar.Token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		seen = append(seen, r.Clone(context.Background()))
		fmt.Fprintf(w, "port=%s path=/%s query=%s cookie=%s", r.PathValue("port"), r.PathValue("path"), r.URL.RawQuery, r.Header.Get("Cookie"))
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	other := e.create(e.KeyA, api.CreateSandboxRequest{})
	p := createPreview(t, e, e.KeyA, sb.ID, 8080, 0)
	addr := strings.TrimPrefix(e.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	wantURL := fmt.Sprintf("http://8080-%s.localhost:%s/?%s=", sb.ID, port, api.PreviewTokenParam)
	if !strings.HasPrefix(p.URL, wantURL) || !strings.HasPrefix(p.PathURL, e.URL+"/preview/"+sb.ID+"/8080/?") || p.Token == "" ||
		!p.ExpiresAt.Equal(p.CreatedAt.Add(time.Hour)) {
		t.Fatalf("preview %+v", p)
	}

	c := previewClient(t, addr)
	resp, body := get(t, c, p.URL)
	if resp.StatusCode != 200 || body != "port=8080 path=/ query= cookie=" {
		t.Fatalf("first visit: %d %q", resp.StatusCode, body)
	}
	if resp.Request.URL.RawQuery != "" {
		t.Errorf("the token stayed in the address: %s", resp.Request.URL)
	}
	// Sub-resources by absolute path, with the app's own cookies and query.
	u, _ := url.Parse(p.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "app", Value: "1"}})
	resp, body = get(t, c, fmt.Sprintf("http://8080-%s.localhost:%s/static/app.js?v=2", sb.ID, port))
	if resp.StatusCode != 200 || body != "port=8080 path=/static/app.js query=v=2 cookie=app=1" {
		t.Errorf("sub-resource: %d %q", resp.StatusCode, body)
	}
	// Only the allowlisted request headers reach the app: never a key.
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://8080-%s.localhost:%s/h", sb.ID, port), nil)
	req.Header.Set("Authorization", "Bearer "+e.KeyA)
	req.Header.Set("X-Api-Key", e.KeyA)
	req.Header.Set("X-Custom", "1")
	req.Header.Set("Accept-Language", "fr")
	req.Header.Set("X-CSRFToken", "t")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("headers: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	h := seen[len(seen)-1].Header
	if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" || h.Get("X-Custom") != "" ||
		h.Get("Accept-Language") != "fr" || h.Get("X-Csrftoken") != "t" || h.Get("X-Forwarded-Host") == "" {
		t.Errorf("headers the app got: %v", h)
	}
	// The path form, with its own cookie.
	resp, body = get(t, c, p.PathURL)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "port=8080 path=/ ") {
		t.Errorf("path form: %d %q", resp.StatusCode, body)
	}
	// The path form shares the API's (and the console's) origin, so a
	// browser runs it in an opaque origin of its own; the host form is
	// an origin of its own already.
	if csp := resp.Header.Values("Content-Security-Policy"); len(csp) != 1 || !strings.HasPrefix(csp[0], "sandbox ") || strings.Contains(csp[0], "allow-same-origin") {
		t.Errorf("path form's CSP: %q", csp)
	}
	resp, _ = get(t, c, p.URL)
	if csp := resp.Header.Get("Content-Security-Policy"); strings.Contains(csp, "sandbox") {
		t.Errorf("host form's CSP: %q", csp)
	}
	// Without a token, with another preview's host, with the token on
	// another sandbox's host: 401, and nothing reaches a sidecar.
	n := len(seen)
	for _, bad := range []string{
		fmt.Sprintf("http://8080-%s.localhost:%s/", other.ID, port),
		fmt.Sprintf("http://8080-%s.localhost:%s/?%s=%s", other.ID, port, api.PreviewTokenParam, p.Token),
		fmt.Sprintf("http://8081-%s.localhost:%s/?%s=%s", sb.ID, port, api.PreviewTokenParam, p.Token),
		fmt.Sprintf("%s/preview/%s/8080/?%s=%s", e.URL, other.ID, api.PreviewTokenParam, p.Token),
		fmt.Sprintf("http://8080-%s.localhost:%s/?%s=bxp_nope", sb.ID, port, api.PreviewTokenParam),
	} {
		c2 := previewClient(t, addr)
		resp, body := get(t, c2, bad)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, api.CodePreviewUnauthorized) {
			t.Errorf("%s: %d %s", bad, resp.StatusCode, body)
		}
	}
	if len(seen) != n {
		t.Errorf("refused requests reached the sidecar")
	}

	resp, listBody := e.do("GET", sandboxPath(sb.ID, "/previews"), e.KeyA, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(listBody), p.ID) || strings.Contains(string(listBody), p.Token) {
		t.Errorf("list: %d %s", resp.StatusCode, listBody)
	}
	if resp, body := e.do("DELETE", sandboxPath(sb.ID, "/preview/8080"), e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(t, c, fmt.Sprintf("http://8080-%s.localhost:%s/", sb.ID, port)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after revoke: %d", resp.StatusCode)
	}
	resp, body2 := e.do("DELETE", sandboxPath(sb.ID, "/preview/8080"), e.KeyA, nil)
	wantError(t, resp, body2, 404, api.CodeNotFound)

	// Expiry.
	p2 := createPreview(t, e, e.KeyA, sb.ID, 3000, 30)
	c3 := previewClient(t, addr)
	if resp, _ := get(t, c3, p2.URL); resp.StatusCode != 200 {
		t.Errorf("short preview: %d", resp.StatusCode)
	}
	e.clock.Advance(31 * time.Second)
	if resp, _ := get(t, c3, fmt.Sprintf("http://3000-%s.localhost:%s/", sb.ID, port)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after expiry: %d", resp.StatusCode)
	}

	for _, tt := range []struct {
		path, body string
		status     int
	}{
		{"/preview/0", `{}`, 422},
		{"/preview/65536", `{}`, 422},
		{"/preview/80", `{"ttl_seconds":29}`, 422},
		{"/preview/80", `{"ttl_seconds":86401}`, 422},
	} {
		resp, body := e.do("POST", sandboxPath(sb.ID, tt.path), e.KeyA, tt.body)
		wantError(t, resp, body, tt.status, api.CodeValidation)
	}

	_, logBody := e.do("GET", sandboxPath(sb.ID, "/log"), e.KeyA, nil)
	for _, op := range []string{"preview_create", "preview_revoke", "preview_requests"} {
		if !strings.Contains(string(logBody), `"operation":"`+op+`"`) {
			t.Errorf("audit log lacks %s: %s", op, logBody)
		}
	}
	if strings.Contains(string(logBody), p.Token) || strings.Contains(e.Logs.String(), p.Token) {
		t.Error("a preview token is in the audit log or the server log")
	}
}

// TestPreviewWebSocketTokenInQuery: a WebSocket client given a preview
// URL opens it with the token in the query. No WebSocket client follows a
// redirect, so the handshake is not sent one (as a page's GET is, to take
// the token out of the address bar): it reaches the app, without the
// token, and the socket works, on the host form and the path form.
func TestPreviewWebSocketTokenInQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	seen := make(chan string, 4)
	e.Sidecar.Route("/preview/{port}/{path...}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.HeaderSidecarToken) != e.Sidecar.Token || r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "not a WebSocket handshake", http.StatusBadRequest)
			return
		}
		seen <- "path=/" + r.PathValue("path") + " query=" + r.URL.RawQuery + " cookie=" + r.Header.Get("Cookie")
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		fmt.Fprint(brw, "echo:"+line)
		_ = brw.Flush()
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	p := createPreview(t, e, e.KeyA, sb.ID, 8080, 0)
	addr := strings.TrimPrefix(e.URL, "http://")
	hostURL, _ := url.Parse(p.URL)
	pathURL, _ := url.Parse(p.PathURL)
	for _, tt := range []struct {
		name, host, target string
	}{
		{"host form", hostURL.Host, "/ws?" + hostURL.RawQuery},
		{"path form", addr, pathURL.Path + "ws?" + pathURL.RawQuery},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"+
				"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", tt.target, tt.host)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
				t.Fatalf("handshake with the token in the query: %d (Location %q) %s; want 101", resp.StatusCode, resp.Header.Get("Location"), b)
			}
			if app := <-seen; app != "path=/ws query= cookie=" {
				t.Errorf("the app got %q; want the path without the token", app)
			}
			fmt.Fprint(conn, "hi\n")
			if line, err := br.ReadString('\n'); err != nil || line != "echo:hi\n" {
				t.Errorf("through the socket: %q, %v", line, err)
			}
		})
	}
}

// TestPreviewTossedCookies: a page under the same parent domain (another
// preview's script, on the preview domain) can set a boxkite_preview
// cookie with a longer path, which the browser then sends before the
// preview's own. The preview still opens with its own among them; with
// none of its own it is 401, and the app never gets any of them.
func TestPreviewTossedCookies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	e.Sidecar.Route("/preview/{port}/{path...}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "cookie=%s", r.Header.Get("Cookie"))
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	attacker := e.create(e.KeyB, api.CreateSandboxRequest{})
	p := createPreview(t, e, e.KeyA, sb.ID, 8080, 0)
	theirs := createPreview(t, e, e.KeyB, attacker.ID, 8080, 0)
	addr := strings.TrimPrefix(e.URL, "http://")
	hostURL, _ := url.Parse(p.URL)
	pathURL, _ := url.Parse(p.PathURL)
	tossed := "boxkite_preview=bxp_junk; boxkite_preview=" + theirs.Token
	for _, tt := range []struct {
		name, host, path, cookie string
		status                   int
		body                     string
	}{
		{"host form, own cookie last", hostURL.Host, "/api/x", tossed + "; app=1; boxkite_preview=" + p.Token, 200, "cookie=app=1"},
		{"path form, own cookie last", addr, pathURL.Path + "api/x", tossed + "; boxkite_preview=" + p.Token, 200, "cookie="},
		{"host form, only tossed ones", hostURL.Host, "/api/x", tossed, 401, api.CodePreviewUnauthorized},
		{"path form, only tossed ones", addr, pathURL.Path, tossed, 401, api.CodePreviewUnauthorized},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+tt.path, nil)
		req.Host = tt.host
		req.Header.Set("Cookie", tt.cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.body) || strings.Contains(string(b), "bxp_") {
			t.Errorf("%s: %d %s; want %d with %q", tt.name, resp.StatusCode, b, tt.status, tt.body)
		}
	}
}
