package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// The browser tools (opt-in): a headless Chromium in the sandbox
// (Debian's chromium in its image), one page per sandbox.

// Browser drives the sandbox's headless Chromium: action is navigate,
// exec, screenshot or close, with the api.Browser*Request and *Result of
// each.
type Browser interface {
	Browser(ctx context.Context, action string, req, out any) error
}

// ImagePrefix starts the text of a tool that answers with an image: a
// data URL (data:image/png;base64,…). MCP servers send it as image
// content; other exporters pass the text on.
const ImagePrefix = "data:image/"

// ImageOf splits a tool's text into an image's MIME type and bytes, if it
// is one (see ImagePrefix).
func ImageOf(text string) (mime string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(text, "data:")
	if !found {
		return "", nil, false
	}
	mime, b64, found := strings.Cut(rest, ";base64,")
	if !found || !strings.HasPrefix(mime, "image/") {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, false
	}
	return mime, data, true
}

func browserTools() []Tool {
	return []Tool{
		{
			Name:        "browser_navigate",
			Description: "Open a URL in the sandbox's headless browser (started on first use) and return the page's title, final URL and HTTP status. The browser reaches what the sandbox reaches: its own servers on localhost, and granted egress.",
			Schema: object(
				strParam("url", "The URL, e.g. http://localhost:3000/.").req(),
				strParam("wait_until", "When navigation counts as done.").oneOf("load", "domcontentloaded", "networkidle", "commit").dflt("load"),
				intParam("timeout_seconds", "Seconds to wait (default 30, max 120).", api.DefaultBrowserNavigateTimeout, 1, api.MaxBrowserTimeout),
			),
			Handler: browserCall("navigate", func(args json.RawMessage) (any, string) {
				var in api.BrowserNavigateRequest
				return &in, decodeBrowser("browser_navigate", args, &in, api.DefaultBrowserNavigateTimeout)
			}, func() any { return &api.BrowserNavigateResult{} }, func(out any) string {
				r := out.(*api.BrowserNavigateResult)
				if r.Error != nil {
					return "Error: " + *r.Error
				}
				return fmt.Sprintf("Loaded %s (status %d)\nTitle: %s", r.URL, r.Status, r.Title)
			}),
		},
		{
			Name:        "browser_exec",
			Description: "Run JavaScript in the open page and return its value as JSON (a promise is awaited), or the error.",
			Schema: object(
				strParam("script", "The JavaScript expression or statements to run in the page.").req(),
				intParam("timeout_seconds", "Seconds to wait (default 10, max 120).", api.DefaultBrowserExecTimeout, 1, api.MaxBrowserTimeout),
			),
			Handler: browserCall("exec", func(args json.RawMessage) (any, string) {
				var in api.BrowserExecRequest
				return &in, decodeBrowser("browser_exec", args, &in, api.DefaultBrowserExecTimeout)
			}, func() any { return &api.BrowserExecResult{} }, func(out any) string {
				r := out.(*api.BrowserExecResult)
				if r.Error != nil {
					return "Error: " + *r.Error
				}
				b, _ := json.Marshal(r.Result)
				return Redact(string(b))
			}),
		},
		{
			Name:        "browser_screenshot",
			Description: "Take a PNG screenshot of the open page (the viewport, or the whole page with full_page); MCP clients receive it as an image.",
			Schema:      object(boolParam("full_page", "Capture the whole scrollable page, not just the viewport.", false)),
			Handler: browserCall("screenshot", func(args json.RawMessage) (any, string) {
				var in api.BrowserScreenshotRequest
				return &in, decode("browser_screenshot", args, &in)
			}, func() any { return &api.BrowserScreenshotResult{} }, func(out any) string {
				r := out.(*api.BrowserScreenshotResult)
				if r.Error != nil {
					return "Error: " + *r.Error
				}
				return "data:image/png;base64," + r.ImageBase64
			}),
		},
		{
			Name:        "browser_close",
			Description: "Close the sandbox's browser; the next browser tool starts a fresh one.",
			Schema:      object(),
			Handler: browserCall("close", func(json.RawMessage) (any, string) { return nil, "" },
				func() any { return &api.BrowserCloseResult{} }, func(out any) string {
					if out.(*api.BrowserCloseResult).Status == "closed" {
						return "Closed the browser"
					}
					return "The browser was not running"
				}),
		},
	}
}

// decodeBrowser decodes a browser tool's arguments into v and refuses a
// timeout_seconds given out of [1, MaxBrowserTimeout] (dflt is the
// tool's default, for the hint).
func decodeBrowser(name string, args json.RawMessage, v any, dflt int) string {
	if msg := decode(name, args, v); msg != "" {
		return msg
	}
	var in struct {
		Timeout *int `json:"timeout_seconds"`
	}
	if decode(name, args, &in) != "" || in.Timeout == nil {
		return ""
	}
	return checkSeconds("timeout_seconds", float64(*in.Timeout), 1, api.MaxBrowserTimeout, float64(dflt))
}

// browserCall is the handler of one browser tool: decode the arguments,
// call the action, render its answer.
func browserCall(action string, in func(json.RawMessage) (any, string), newOut func() any, text func(any) string) Handler {
	return func(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
		req, msg := in(args)
		if msg != "" {
			return msg, nil
		}
		b, ok := sb.(Browser)
		if !ok {
			return unsupported("a browser"), nil
		}
		out := newOut()
		if text, done, err := result(ctx, b.Browser(ctx, action, req, out)); done {
			return text, err
		}
		return text(out), nil
	}
}
