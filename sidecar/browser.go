package sidecar

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
)

// The browser tools (browser_navigate, browser_exec, browser_screenshot,
// browser_close): one headless Chromium per sandbox, started on first use
// as the sandbox user and driven over the DevTools protocol (CDP) on a
// loopback port of the sandbox's own network namespace. It runs with
// --no-sandbox: the jail is the sandbox, and it forbids the user
// namespaces Chromium's own sandbox needs.

const (
	browserStartup = 45 * time.Second
	browserIdle    = 10 * time.Minute
)

// browserArgs are Chromium's flags: headless, no first-run work, nothing
// that calls home (the sandbox has no network, and each attempt is noise).
var browserArgs = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
	"--disable-extensions", "--mute-audio", "--hide-scrollbars", "--window-size=1280,800",
	"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
}

// devtoolsPattern finds the DevTools address in chromium's stderr.
const devtoolsPattern = `DevTools listening on (ws://127\.0\.0\.1:\d+/\S+)`

// browser is the sandbox's Chromium, nil fields while not running.
type browser struct {
	h  *Handler
	mu sync.Mutex // one call at a time; held while starting too

	cmd    *exec.Cmd
	page   *cdp
	dir    string // the profile
	reaper *time.Timer
}

func newBrowser(h *Handler) *browser { return &browser{h: h} }

func browserBinary(env []string) (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := lookPath(env, name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium in the sandbox's image: install Debian's chromium in it (docs/mcp.md, browser tools)")
}

// start launches Chromium and attaches to its first page. b.mu is held.
func (b *browser) start(ctx context.Context) error {
	h := b.h
	bin, err := browserBinary(h.env)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "boxkite-browser-")
	if err != nil {
		return fmt.Errorf("browser profile: %w", err)
	}
	if ra := h.opts.RunAs; ra != nil && !ra.NestedUserNS {
		_ = os.Chown(dir, ra.UID, ra.GID)
	}
	cmd := exec.Command(bin, append(append([]string(nil), browserArgs...), "--user-data-dir="+dir, "about:blank")...)
	cmd.Dir, cmd.Env = h.workspace, append(append([]string(nil), h.env...), "HOME="+dir)
	if cmd.SysProcAttr, err = h.sysProcAttr(); err != nil {
		os.RemoveAll(dir)
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("start chromium: %w", err)
	}
	h.oomFirst(cmd.Process.Pid)
	b.cmd, b.dir = cmd, dir
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		// Compiled here, not at package init: every jail's start would
		// pay for it, and few ever start a browser (issue 27).
		devtoolsRE := regexp.MustCompile(devtoolsPattern)
		sent := false
		for sc.Scan() {
			if m := devtoolsRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	ctx, cancel := context.WithTimeout(ctx, browserStartup)
	defer cancel()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-ctx.Done():
		b.stopLocked()
		return errors.New("chromium did not start within 45 s (a small sandbox may lack the memory: use size medium or larger)")
	}
	pageURL, err := pageTarget(ctx, wsURL)
	if err != nil {
		b.stopLocked()
		return err
	}
	if b.page, err = dialCDP(ctx, pageURL); err != nil {
		b.stopLocked()
		return err
	}
	for _, m := range []string{"Page.enable", "Network.enable", "Runtime.enable"} {
		if _, err := b.page.call(ctx, m, nil); err != nil {
			b.stopLocked()
			return err
		}
	}
	return nil
}

// pageTarget finds the first page's DevTools WebSocket from the browser's
// /json/list, on the port of the browser's own WebSocket.
func pageTarget(ctx context.Context, browserWS string) (string, error) {
	host := strings.TrimPrefix(browserWS, "ws://")
	host, _, _ = strings.Cut(host, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/json/list", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("list chromium's pages: %w", err)
	}
	defer resp.Body.Close()
	var targets []struct {
		Type                 string `json:"type"`
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		return "", fmt.Errorf("list chromium's pages: %w", err)
	}
	for _, t := range targets {
		if t.Type == "page" && t.WebSocketDebuggerURL != "" {
			return t.WebSocketDebuggerURL, nil
		}
	}
	return "", errors.New("chromium has no page")
}

// stopLocked ends Chromium. b.mu is held.
func (b *browser) stopLocked() bool {
	if b.cmd == nil {
		return false
	}
	if b.page != nil {
		b.page.close()
		b.page = nil
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
	os.RemoveAll(b.dir)
	b.cmd, b.dir = nil, ""
	return true
}

func (b *browser) stop() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopLocked()
}

// use runs fn with a running browser, starting one if needed; an error of
// fn that is the browser's own (it died) stops it, so the next call starts
// afresh.
func (b *browser) use(ctx context.Context, fn func(p *cdp) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil && b.page.dead() {
		b.stopLocked()
	}
	if b.cmd == nil {
		if err := b.start(ctx); err != nil {
			return err
		}
	}
	if b.reaper == nil {
		b.reaper = time.AfterFunc(browserIdle, func() { b.stop() })
	} else {
		b.reaper.Reset(browserIdle)
	}
	err := fn(b.page)
	if b.page.dead() {
		b.stopLocked()
	}
	return err
}

// browserTimeout is a browser route's timeout_seconds: 0 (omitted) is
// def, one outside 1..MaxBrowserTimeout is refused with 422, as exec's
// timeout and the browser_* tools refuse it. The reference gives these
// routes defaults but no range to clamp to (boxkite-reference.md, the
// browser routes), unlike the interpreter, /watch and /pty-exec, whose
// reference clamps are kept.
func browserTimeout(v, def int) (time.Duration, error) {
	if v == 0 {
		v = def
	} else if v < 1 || v > api.MaxBrowserTimeout {
		return 0, api.Invalid("timeout_seconds",
			fmt.Sprintf("timeout_seconds must be between 1 and %d seconds, got %d", api.MaxBrowserTimeout, v),
			fmt.Sprintf("omit timeout_seconds for the default of %d seconds", def))
	}
	return time.Duration(v) * time.Second, nil
}

func errText(err error) *string {
	s := err.Error()
	return &s
}

func (h *Handler) browserNavigate(w http.ResponseWriter, r *http.Request) error {
	var req api.BrowserNavigateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.URL == "" {
		return api.Invalid("url", "url must not be empty", "")
	}
	switch req.WaitUntil {
	case "", "load", "domcontentloaded", "networkidle", "commit":
	default:
		return api.Invalid("wait_until", "wait_until must be load, domcontentloaded, networkidle or commit", "")
	}
	timeout, err := browserTimeout(req.TimeoutSeconds, api.DefaultBrowserNavigateTimeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	var res api.BrowserNavigateResult
	err = h.sess.browser.use(ctx, func(p *cdp) error {
		var err error
		res, err = p.navigate(ctx, req.URL, req.WaitUntil)
		return err
	})
	if err != nil {
		res.Error = errText(err)
	}
	return writeJSON(w, http.StatusOK, res)
}

func (h *Handler) browserExec(w http.ResponseWriter, r *http.Request) error {
	var req api.BrowserExecRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Script) == "" {
		return api.Invalid("script", "script must not be empty", "")
	}
	timeout, err := browserTimeout(req.TimeoutSeconds, api.DefaultBrowserExecTimeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	var res api.BrowserExecResult
	err = h.sess.browser.use(ctx, func(p *cdp) error {
		v, err := p.evaluate(ctx, req.Script)
		res.Result = v
		return err
	})
	if err != nil {
		res.Error = errText(err)
	}
	return writeJSON(w, http.StatusOK, res)
}

func (h *Handler) browserScreenshot(w http.ResponseWriter, r *http.Request) error {
	var req api.BrowserScreenshotRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), api.MaxBrowserTimeout*time.Second)
	defer cancel()
	var res api.BrowserScreenshotResult
	err := h.sess.browser.use(ctx, func(p *cdp) error {
		raw, err := p.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": req.FullPage})
		if err != nil {
			return err
		}
		var shot struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(raw, &shot); err != nil {
			return err
		}
		if base64.StdEncoding.DecodedLen(len(shot.Data)) > api.MaxScreenshotBytes {
			return fmt.Errorf("the screenshot is larger than %d MiB; take it without full_page", api.MaxScreenshotBytes>>20)
		}
		res.ImageBase64 = shot.Data
		return nil
	})
	if err != nil {
		res.Error = errText(err)
	}
	return writeJSON(w, http.StatusOK, res)
}

func (h *Handler) browserClose(w http.ResponseWriter, _ *http.Request) error {
	status := "not_running"
	if h.sess.browser.stop() {
		status = "closed"
	}
	return writeJSON(w, http.StatusOK, api.BrowserCloseResult{Status: status})
}

// cdp is one DevTools protocol connection to a page target.
type cdp struct {
	conn    *websocket.Conn
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan cdpMessage
	waiters map[string][]chan json.RawMessage // event method → one-shot waiters
	status  int                               // of the last main document response
	done    chan struct{}
}

type cdpMessage struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func dialCDP(ctx context.Context, u string) (*cdp, error) {
	conn, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		return nil, fmt.Errorf("attach to chromium's page: %w", err)
	}
	conn.SetReadLimit(64 << 20) // screenshots come in one message
	c := &cdp{conn: conn, pending: map[int64]chan cdpMessage{}, waiters: map[string][]chan json.RawMessage{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

func (c *cdp) read() {
	defer close(c.done)
	for {
		_, b, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.pending[m.ID]; ok {
				delete(c.pending, m.ID)
				ch <- m
			}
		} else {
			if m.Method == "Network.responseReceived" {
				var p struct {
					Type     string `json:"type"`
					Response struct {
						Status int `json:"status"`
					} `json:"response"`
				}
				if json.Unmarshal(m.Params, &p) == nil && p.Type == "Document" {
					c.status = p.Response.Status
				}
			}
			for _, ch := range c.waiters[m.Method] {
				ch <- m.Params
			}
			delete(c.waiters, m.Method)
		}
		c.mu.Unlock()
	}
}

func (c *cdp) dead() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *cdp) close() { _ = c.conn.Close(websocket.StatusNormalClosure, "") }

// call sends one command and waits for its answer.
func (c *cdp) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan cdpMessage, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := c.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-c.done:
		return nil, errors.New("chromium went away")
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: timed out", method)
	}
}

// wait returns a channel that receives the params of the next event.
func (c *cdp) wait(method string) chan json.RawMessage {
	ch := make(chan json.RawMessage, 1)
	c.mu.Lock()
	c.waiters[method] = append(c.waiters[method], ch)
	c.mu.Unlock()
	return ch
}

func (c *cdp) navigate(ctx context.Context, u, waitUntil string) (api.BrowserNavigateResult, error) {
	var res api.BrowserNavigateResult
	event := map[string]string{
		"": "Page.loadEventFired", "load": "Page.loadEventFired",
		"domcontentloaded": "Page.domContentEventFired", "networkidle": "Page.loadEventFired",
	}[waitUntil]
	var ev chan json.RawMessage
	if event != "" {
		ev = c.wait(event)
	}
	c.mu.Lock()
	c.status = 0
	c.mu.Unlock()
	raw, err := c.call(ctx, "Page.navigate", map[string]any{"url": u})
	if err != nil {
		return res, err
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	_ = json.Unmarshal(raw, &nav)
	if nav.ErrorText != "" {
		return res, fmt.Errorf("navigate to %s: %s", u, nav.ErrorText)
	}
	if ev != nil {
		select {
		case <-ev:
		case <-ctx.Done():
			return res, fmt.Errorf("%s did not finish loading in time", u)
		}
	}
	if waitUntil == "networkidle" {
		// Half a second without new requests would need request tracking;
		// a short settle after load is what most pages need.
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	v, err := c.evaluate(ctx, "({title: document.title, url: location.href})")
	if err != nil {
		return res, err
	}
	if m, ok := v.(map[string]any); ok {
		res.Title, _ = m["title"].(string)
		res.URL, _ = m["url"].(string)
	}
	c.mu.Lock()
	res.Status = c.status
	c.mu.Unlock()
	return res, nil
}

// evaluate runs script in the page and returns its value (a promise
// awaited), or the exception as an error.
func (c *cdp) evaluate(ctx context.Context, script string) (any, error) {
	params := map[string]any{
		"expression": script, "returnByValue": true, "awaitPromise": true, "userGesture": true,
	}
	if d, ok := ctx.Deadline(); ok {
		// Chromium stops the script itself at the deadline: a script that
		// never ends (while (true) {}) would otherwise keep the page's
		// thread, and every later call would time out behind it.
		params["timeout"] = max(time.Until(d).Milliseconds(), 1)
	}
	raw, err := c.call(ctx, "Runtime.evaluate", params)
	if err != nil {
		return nil, err
	}
	var out struct {
		Result struct {
			Value       any    `json:"value"`
			Description string `json:"description"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if e := out.ExceptionDetails; e != nil {
		msg := e.Exception.Description
		if msg == "" {
			msg = e.Text
		}
		return nil, errors.New(msg)
	}
	return out.Result.Value, nil
}
