package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// The opt-in tools (reference §4.2): off unless an agent builder enables
// them, by name, in `boxkite tools export --tools`, boxkite-mcp --enable or
// the hosted /mcp/?enable=.

// HTTPRequester makes HTTP requests through the control plane's secrets
// broker (http_request): {{secret:NAME}} is filled in by the server, never
// in the sandbox.
type HTTPRequester interface {
	HTTPRequest(ctx context.Context, req api.HTTPRequest) (*api.HTTPResponse, error)
}

// Optional returns every opt-in tool, in a stable order.
func Optional() []Tool {
	return []Tool{httpRequestTool(), runTestsTool()}
}

// OptionalNames are the names of the opt-in tools.
func OptionalNames() []string {
	var out []string
	for _, t := range Optional() {
		out = append(out, t.Name)
	}
	return out
}

// Enabled returns the opt-in tools named, each once, in Optional's order;
// an unknown name is an error naming the known ones.
func Enabled(names []string) ([]Tool, error) {
	known := OptionalNames()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("%q is not an opt-in tool; they are %s", n, strings.Join(known, ", "))
		}
	}
	var out []Tool
	for _, t := range Optional() {
		if slices.Contains(names, t.Name) {
			out = append(out, t)
		}
	}
	return out, nil
}

const httpRequestMaxTimeout = api.MaxHTTPRequestTimeout

func httpRequestTool() Tool {
	return Tool{
		Name: "http_request",
		Description: "Make an HTTP request from the boxkite server (not the sandbox) and return the status, headers and body. " +
			"Write {{secret:NAME}} in the URL's path or query, a header value or the body where a secret's value goes: " +
			"the server fills it in, so you never see it, and only sends it to the hosts that secret allows. " +
			"Echoes of a secret in the answer read [REDACTED_SECRET:NAME].",
		Schema: object(
			strParam("method", "The HTTP method, e.g. GET or POST.").req(),
			strParam("url", "The absolute http or https URL.").req(),
			param{name: "headers", typ: "object", desc: "Request headers, name to value; values may hold {{secret:NAME}}."},
			strParam("body", "The request body."),
			intParam("timeout", "Seconds to wait for the answer (default 15, max 60).", api.DefaultHTTPRequestTimeout, 1, httpRequestMaxTimeout),
		),
		Handler: runHTTPRequest,
	}
}

func runHTTPRequest(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
		Timeout int               `json:"timeout"`
	}{Timeout: api.DefaultHTTPRequestTimeout}
	if msg := decode("http_request", args, &in); msg != "" {
		return msg, nil
	}
	hr, ok := sb.(HTTPRequester)
	if !ok {
		return unsupported("HTTP requests through the secrets broker"), nil
	}
	res, err := hr.HTTPRequest(ctx, api.HTTPRequest{
		Method: in.Method, URL: in.URL, Headers: in.Headers, Body: in.Body,
		Timeout: clamp(in.Timeout, 1, httpRequestMaxTimeout),
	})
	if text, done, err := result(err); done {
		return text, err
	}
	return httpResponseText(res), nil
}

// httpResponseText renders an answer: a status line, the headers sorted,
// a blank line and the body (already redacted of the secrets used by the
// server; the regex redaction of every tool runs over it too).
func httpResponseText(res *api.HTTPResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d\n", res.StatusCode)
	names := make([]string, 0, len(res.Headers))
	for k := range res.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\n", k, res.Headers[k])
	}
	b.WriteString("\n")
	b.WriteString(res.Body)
	if res.Truncated {
		b.WriteString("\n... (body truncated at 1 MiB)")
	}
	if len(res.SecretsUsed) > 0 {
		fmt.Fprintf(&b, "\n(secrets used: %s)", strings.Join(res.SecretsUsed, ", "))
	}
	return Redact(b.String())
}
