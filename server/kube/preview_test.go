package kube_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestPreviewOnKube: a preview URL reaches a port through a pod's sidecar
// (pinned TLS, WebSocket upgrade included) on the kube driver. The test
// kubelet runs the sidecar as a process of this host, so the app it
// reaches on 127.0.0.1 is one this test serves.
func TestPreviewOnKube(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
			if err != nil {
				return
			}
			defer c.CloseNow()
			if typ, b, err := c.Read(r.Context()); err == nil {
				_ = c.Write(r.Context(), typ, append([]byte("pong:"), b...))
			}
			return
		}
		fmt.Fprintf(w, "app path=%s", r.URL.Path)
	}))
	defer app.Close()
	_, appPort, _ := net.SplitHostPort(strings.TrimPrefix(app.URL, "http://"))

	ctx := context.Background()
	c := e.client()
	sbs, err := c.CreateSandboxes(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sb := sbs[0]
	var port int
	fmt.Sscan(appPort, &port)
	p, err := c.CreatePreview(ctx, sb.ID, port, api.CreatePreviewRequest{})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(e.url, "http://")
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{Timeout: 5 * time.Second}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}}
	get := func(u string) (int, string) {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(p.URL); code != 200 || body != "app path=/" {
		t.Fatalf("preview: %d %q", code, body)
	}
	_, serverPort, _ := net.SplitHostPort(addr)
	host := fmt.Sprintf("%d-%s.localhost:%s", port, sb.ID, serverPort)
	if code, body := get("http://" + host + "/static/app.js"); code != 200 || body != "app path=/static/app.js" {
		t.Errorf("absolute path: %d %q", code, body)
	}
	ws, _, err := websocket.Dial(ctx, "ws://"+host+"/ws", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatalf("websocket: %v", err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.Read(ctx); err != nil || string(msg) != "pong:ping" {
		t.Errorf("websocket answer %q, %v", msg, err)
	}
	ws.CloseNow()
	if err := c.RevokePreviews(ctx, sb.ID, port); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("http://" + host + "/"); code != http.StatusUnauthorized {
		t.Errorf("after revoke: %d", code)
	}
}

// TestOptInToolsOnKube: pty_exec and the Node.js interpreter through a
// pod's sidecar on the kube driver.
func TestOptInToolsOnKube(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	sbs, err := c.CreateSandboxes(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := sbs[0].ID
	res, err := c.PTYExec(ctx, id, api.PTYExecRequest{Command: `sh -c 'test -t 0 && echo on-a-tty'`})
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || !strings.Contains(res.Output, "on-a-tty") {
		t.Errorf("pty-exec: %+v, %v", res, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	if _, err := c.NodeInterpreterExec(ctx, id, api.InterpreterExecRequest{Code: "var k = 6"}); err != nil {
		t.Fatal(err)
	}
	r, err := c.NodeInterpreterExec(ctx, id, api.InterpreterExecRequest{Code: "k * 7"})
	if err != nil || r.Result == nil || *r.Result != "42" {
		t.Errorf("node state: %+v, %v", r, err)
	}

	// The browser, on a page the pod reaches on 127.0.0.1 (this host's,
	// under the test kubelet).
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<html><head><title>kube page</title></head><body></body></html>`)
	}))
	defer site.Close()
	var nav api.BrowserNavigateResult
	if err := c.Browser(ctx, id, "navigate", api.BrowserNavigateRequest{URL: site.URL}, &nav); err != nil || nav.Error != nil || nav.Title != "kube page" {
		t.Errorf("browser navigate: %+v, %v", nav, err)
	}
	var shot api.BrowserScreenshotResult
	if err := c.Browser(ctx, id, "screenshot", api.BrowserScreenshotRequest{}, &shot); err != nil || shot.Error != nil || !strings.HasPrefix(shot.ImageBase64, "iVBORw0KGgo") {
		t.Errorf("browser screenshot: %v %v", shot.Error, err)
	}
	var closed api.BrowserCloseResult
	if err := c.Browser(ctx, id, "close", nil, &closed); err != nil || closed.Status != "closed" {
		t.Errorf("browser close: %+v, %v", closed, err)
	}
}
