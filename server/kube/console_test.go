package kube_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/kube"
)

// consoleSession is a browser signed in to the web console: its cookie
// and CSRF token, sending what the console's page sends.
type consoleSession struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	csrf   string
}

// signInByLink signs in as `boxkite ui` does: a one-time link minted with
// the admin key, opened once.
func signInByLink(t *testing.T, base, key string) *consoleSession {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/ui/links", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var link console.LinkResponse
	err = json.NewDecoder(resp.Body).Decode(&link)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("mint a link: %d, %v", resp.StatusCode, err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(base + link.Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := &consoleSession{t: t, base: base}
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			s.cookie = c
		}
	}
	if s.cookie == nil {
		t.Fatalf("opening the link set no cookie: %d", resp.StatusCode)
	}
	var info console.SessionInfo
	s.mustJSON("GET", "/ui/session", nil, http.StatusOK, &info)
	s.csrf = info.CSRFToken
	return s
}

// do sends a request from the console's page: same origin, the cookie,
// the CSRF token.
func (s *consoleSession) do(method, path string, body []byte) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Origin", s.base)
	req.Header.Set(console.CSRFHeader, s.csrf)
	req.AddCookie(s.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// mustJSON sends body as JSON and decodes the answer into out, failing
// the test unless the status is want.
func (s *consoleSession) mustJSON(method, path string, body any, want int, out any) {
	s.t.Helper()
	var in []byte
	if body != nil {
		in, _ = json.Marshal(body)
	}
	code, data := s.do(method, path, in)
	if code != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, code, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// terminal opens the sandbox's terminal as the console's page does.
func (s *consoleSession) terminal(ctx context.Context, id string, readOnly bool) *websocket.Conn {
	s.t.Helper()
	u := strings.Replace(s.base, "http://", "ws://", 1) + "/ui/api/v1/sandboxes/" + id + "/takeover"
	if readOnly {
		u += "?read_only=1"
	}
	hdr := http.Header{"Origin": {s.base}, "Cookie": {s.cookie.String()}}
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		s.t.Fatalf("open the terminal (read-only %v): %v (%v)", readOnly, err, resp)
	}
	c.SetReadLimit(1 << 20)
	go func() {
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"resize","cols":100,"rows":30}`))
	}()
	return c
}

// screen collects what a terminal shows.
type screen struct {
	lines chan string // each output line, as shown (from its last \r)
	ended chan error  // the connection's end
}

func watchTerminal(ctx context.Context, c *websocket.Conn) *screen {
	s := &screen{lines: make(chan string, 256), ended: make(chan error, 1)}
	go func() {
		var partial []byte
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				s.ended <- err
				return
			}
			partial = append(partial, data...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				l := strings.TrimRight(string(partial[:i]), "\r")
				s.lines <- l[strings.LastIndexByte(l, '\r')+1:] // what a terminal shows of it
				partial = partial[i+1:]
			}
		}
	}()
	return s
}

// waitLine waits for a line that is exactly want, returning what came
// before it.
func (s *screen) waitLine(t *testing.T, want string) []string {
	t.Helper()
	var seen []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-s.lines:
			if l == want {
				return seen
			}
			seen = append(seen, l)
		case err := <-s.ended:
			t.Fatalf("the terminal ended (%v) before a line %q; it showed %q", err, want, seen)
		case <-timeout:
			t.Fatalf("no line %q in 30 s; the terminal showed %q", want, seen)
		}
	}
}

// TestConsole (issue 29 on the kube driver): every call the web console's
// pages make that reaches the driver works against a sandbox pod, through
// the console's /ui/api/ with a browser's session: create, stats,
// processes, files (list, upload, download byte-exact), the live audit
// log, the terminal with a read-only viewer who cannot type, sign-out
// ending the terminal, destroy. The browser itself is exercised by
// cmd/boxkite-server's TestConsoleInBrowser on the local driver.
func TestConsole(t *testing.T) {
	e := newEnv(t, kube.Config{})
	// No flush of typed bytes while the test runs: the command reaches the
	// live log because Enter wrote it, whatever the machine's load.
	e.srvCfg.TakeoverFlushInterval = time.Hour
	e.console = true
	e.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := signInByLink(t, e.url, e.key)

	var sb api.Sandbox
	s.mustJSON("POST", "/ui/api/v1/sandboxes", api.CreateSandboxRequest{Label: "ui-kube"}, http.StatusCreated, &sb)
	// The sandbox page's resources: the pod's use, read by its sidecar
	// (TestStatsOnKube).
	var stats api.SandboxStats
	s.mustJSON("GET", "/ui/api/v1/sandboxes/"+sb.ID+"/stats", nil, http.StatusOK, &stats)
	if stats.MemoryBytes <= 0 {
		t.Errorf("stats through the console: %+v, want the pod's memory", stats)
	}
	var procs map[string]any
	s.mustJSON("GET", "/ui/api/v1/sandboxes/"+sb.ID+"/processes", nil, http.StatusOK, &procs)

	// Files: upload, list, download byte-exact.
	data := append([]byte("\x00\xff\r\n"), make([]byte, 200<<10)...)
	if _, err := rand.Read(data[4:]); err != nil {
		t.Fatal(err)
	}
	raw := "/ui/api/v1/sandboxes/" + sb.ID + "/files/raw?path=" + url.QueryEscape("/workspace/ui.bin")
	if code, body := s.do("PUT", raw, data); code/100 != 2 {
		t.Fatalf("upload: %d %s", code, body)
	}
	var ls api.LsResult
	s.mustJSON("POST", "/ui/api/v1/sandboxes/"+sb.ID+"/files/ls", api.LsRequest{Path: "/workspace"}, http.StatusOK, &ls)
	if !slices.ContainsFunc(ls.Entries, func(e api.LsEntry) bool { return e.Path == "/workspace/ui.bin" && e.Size == int64(len(data)) }) {
		t.Errorf("files/ls /workspace: %+v, want ui.bin of %d bytes", ls.Entries, len(data))
	}
	if code, got := s.do("GET", raw, nil); code != http.StatusOK || !bytes.Equal(got, data) {
		t.Errorf("download: %d, %d bytes, equal %v; want %d bytes back", code, len(got), bytes.Equal(got, data), len(data))
	}

	// The live audit log (what the log page follows), before anything is typed.
	watchReq, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/ui/api/v1/sandboxes/"+sb.ID+"/watch", nil)
	watchReq.AddCookie(s.cookie)
	watchResp, err := http.DefaultClient.Do(watchReq)
	if err != nil || watchResp.StatusCode != http.StatusOK {
		t.Fatalf("follow the audit log: %v, %v", watchResp, err)
	}
	defer watchResp.Body.Close()
	logged := make(chan time.Time, 16)
	go func() {
		sc := bufio.NewScanner(watchResp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), "echo hi-from-ui") {
				logged <- time.Now()
			}
		}
	}()

	// The terminal: type, see the output, and the command in the log.
	writer := s.terminal(ctx, sb.ID, false)
	defer writer.CloseNow()
	ws := watchTerminal(ctx, writer)
	viewer := s.terminal(ctx, sb.ID, true)
	defer viewer.CloseNow()
	vs := watchTerminal(ctx, viewer)
	time.Sleep(300 * time.Millisecond) // the shell's prompt
	entered := time.Now()
	if err := writer.Write(ctx, websocket.MessageBinary, []byte("echo hi-from-ui\r")); err != nil {
		t.Fatal(err)
	}
	ws.waitLine(t, "hi-from-ui")
	select {
	case at := <-logged:
		t.Logf("the command reached the live audit log %v after Enter", at.Sub(entered).Round(time.Millisecond))
	case <-time.After(time.Minute):
		t.Error("the command never reached the live audit log: Enter did not write it")
	}

	// The read-only viewer sees the terminal but what it types is dropped.
	if err := viewer.Write(ctx, websocket.MessageBinary, []byte("echo typed-by-viewer\r")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := writer.Write(ctx, websocket.MessageBinary, []byte("echo seen-by-viewer\r")); err != nil {
		t.Fatal(err)
	}
	before := vs.waitLine(t, "seen-by-viewer")
	if shown := strings.Join(append(before, ws.waitLine(t, "seen-by-viewer")...), "\n"); strings.Contains(shown, "typed-by-viewer") {
		t.Errorf("the read-only viewer typed into the terminal:\n%s", shown)
	}

	// Signing out ends the terminal session.
	s.mustJSON("DELETE", "/ui/session", nil, http.StatusNoContent, nil)
	select {
	case <-ws.ended:
	case <-time.After(time.Minute):
		t.Error("the terminal is still open a minute after signing out")
	}
	if code, _ := s.do("GET", "/ui/api/v1/sandboxes", nil); code != http.StatusUnauthorized {
		t.Errorf("the signed-out cookie: %d, want 401", code)
	}

	s = signInByLink(t, e.url, e.key)
	s.mustJSON("DELETE", "/ui/api/v1/sandboxes/"+sb.ID, nil, http.StatusNoContent, nil)
	s.mustJSON("GET", "/ui/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, &sb)
	if sb.Status != api.StatusDestroyed {
		t.Errorf("after destroy: %s", sb.Status)
	}
}
