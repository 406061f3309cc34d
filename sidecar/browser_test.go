package sidecar

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestBrowser: navigate to a page, run script in it, screenshot it (a red
// page reads back red), close; failures come back in error.
func TestBrowser(t *testing.T) {
	if _, err := browserBinary(SafeEnv(t.TempDir())); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<html><head><title>red page</title></head><body style="margin:0;background:#ff0000"><p id=x>hi</p></body></html>`)
	}))
	defer site.Close()
	base, _ := newToolServer(t, Options{})

	var nav api.BrowserNavigateResult
	doJSON(t, "POST", base+"/browser/navigate", api.BrowserNavigateRequest{URL: site.URL + "/"}, http.StatusOK, &nav)
	if nav.Error != nil || nav.Title != "red page" || nav.Status != 200 || nav.URL != site.URL+"/" {
		t.Fatalf("navigate: %+v", nav)
	}
	var ex api.BrowserExecResult
	doJSON(t, "POST", base+"/browser/exec", api.BrowserExecRequest{Script: "document.getElementById('x').textContent + (1 + 1)"}, http.StatusOK, &ex)
	if ex.Error != nil || ex.Result != "hi2" {
		t.Errorf("exec: %+v", ex)
	}
	doJSON(t, "POST", base+"/browser/exec", api.BrowserExecRequest{Script: "Promise.resolve({a: [1, 2]})"}, http.StatusOK, &ex)
	if ex.Error != nil || fmt.Sprint(ex.Result) != "map[a:[1 2]]" {
		t.Errorf("exec of a promise: %+v", ex)
	}
	doJSON(t, "POST", base+"/browser/exec", api.BrowserExecRequest{Script: "throw new Error('nope')"}, http.StatusOK, &ex)
	if ex.Error == nil {
		t.Errorf("exec of a throw: %+v", ex)
	}
	var shot api.BrowserScreenshotResult
	doJSON(t, "POST", base+"/browser/screenshot", api.BrowserScreenshotRequest{}, http.StatusOK, &shot)
	b, err := base64.StdEncoding.DecodeString(shot.ImageBase64)
	if err != nil || shot.Error != nil {
		t.Fatalf("screenshot: %v %+v", err, shot.Error)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	c := color.RGBAModel.Convert(img.At(img.Bounds().Dx()/2, img.Bounds().Dy()-5)).(color.RGBA)
	if c.R < 240 || c.G > 15 || c.B > 15 {
		t.Errorf("the page is red; the screenshot's pixel is %v", c)
	}
	doJSON(t, "POST", base+"/browser/navigate", api.BrowserNavigateRequest{URL: site.URL + "/missing"}, http.StatusOK, &nav)
	if nav.Status != 404 {
		t.Errorf("navigate to a 404: %+v", nav)
	}
	doJSON(t, "POST", base+"/browser/navigate", api.BrowserNavigateRequest{URL: "http://127.0.0.1:1/"}, http.StatusOK, &nav)
	if nav.Error == nil {
		t.Errorf("navigate to nothing: %+v", nav)
	}
	var closed api.BrowserCloseResult
	doJSON(t, "POST", base+"/browser/close", nil, http.StatusOK, &closed)
	if closed.Status != "closed" {
		t.Errorf("close: %+v", closed)
	}
	doJSON(t, "POST", base+"/browser/close", nil, http.StatusOK, &closed)
	if closed.Status != "not_running" {
		t.Errorf("close again: %+v", closed)
	}
}

// TestBrowserTimeoutRefused: a timeout_seconds outside 1..120 is refused
// with 422 and a hint, as exec's timeout and the browser_* tools are; it
// was clamped (9999 ran with 120, -5 with the default). Refused before
// any browser starts, so this needs no Chromium.
func TestBrowserTimeoutRefused(t *testing.T) {
	base, _ := newToolServer(t, Options{})
	for _, tt := range []struct {
		route string
		body  any
		def   int
	}{
		{"navigate", api.BrowserNavigateRequest{URL: "http://127.0.0.1:1/", TimeoutSeconds: 9999}, api.DefaultBrowserNavigateTimeout},
		{"navigate", api.BrowserNavigateRequest{URL: "http://127.0.0.1:1/", TimeoutSeconds: -5}, api.DefaultBrowserNavigateTimeout},
		{"navigate", api.BrowserNavigateRequest{URL: "http://127.0.0.1:1/", TimeoutSeconds: api.MaxBrowserTimeout + 1}, api.DefaultBrowserNavigateTimeout},
		{"exec", api.BrowserExecRequest{Script: "1", TimeoutSeconds: 9999}, api.DefaultBrowserExecTimeout},
		{"exec", api.BrowserExecRequest{Script: "1", TimeoutSeconds: -1}, api.DefaultBrowserExecTimeout},
	} {
		var env api.ErrorEnvelope
		doJSON(t, "POST", base+"/browser/"+tt.route, tt.body, http.StatusUnprocessableEntity, &env)
		got := fmt.Sprint(tt.body)
		if env.Error == nil || env.Error.Code != api.CodeValidation ||
			!strings.HasPrefix(env.Error.Message, "timeout_seconds must be between 1 and 120 seconds, got ") ||
			env.Error.Hint != fmt.Sprintf("omit timeout_seconds for the default of %d seconds", tt.def) {
			t.Errorf("%s %s: %+v, want validation_error naming the range and the default", tt.route, got, env.Error)
		}
	}
}

// TestBrowserEndlessScript: a script that never ends is stopped at its
// timeout, and the page answers the next one: it kept the page's thread,
// and every later call timed out behind it until the browser was closed.
func TestBrowserEndlessScript(t *testing.T) {
	if _, err := browserBinary(SafeEnv(t.TempDir())); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<html><head><title>page</title></head><body>hi</body></html>`)
	}))
	defer site.Close()
	base, _ := newToolServer(t, Options{})
	var nav api.BrowserNavigateResult
	doJSON(t, "POST", base+"/browser/navigate", api.BrowserNavigateRequest{URL: site.URL + "/"}, http.StatusOK, &nav)
	if nav.Error != nil {
		t.Fatalf("navigate: %+v", nav)
	}
	var ex api.BrowserExecResult
	doJSON(t, "POST", base+"/browser/exec", api.BrowserExecRequest{Script: "while (true) {}", TimeoutSeconds: 2}, http.StatusOK, &ex)
	if ex.Error == nil {
		t.Fatalf("an endless script: %+v, want an error", ex)
	}
	t.Logf("the endless script: %s", *ex.Error)
	for _, tt := range []struct{ script, want string }{{"1 + 1", "2"}, {"document.title", "page"}} {
		doJSON(t, "POST", base+"/browser/exec", api.BrowserExecRequest{Script: tt.script, TimeoutSeconds: 10}, http.StatusOK, &ex)
		if ex.Error != nil || fmt.Sprint(ex.Result) != tt.want {
			t.Errorf("%s after an endless script: %+v, want %s", tt.script, ex, tt.want)
		}
	}
}
