package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// apiOptions are the flags of `boxkite api`.
type apiOptions struct {
	method    string
	rawFields []string // -f key=value: strings
	fields    []string // -F key=value: typed, @file reads a file
	headers   []string
	input     string
	paginate  bool
	include   bool
	out       outputFlags
}

func newAPICmd(app *App) *cobra.Command {
	var opts apiOptions
	cmd := &cobra.Command{
		Use:   "api [METHOD] PATH",
		Short: "Make an authenticated request to the boxkite API",
		Long: `Make an authenticated request to the boxkite API and print the JSON it
answers, like 'gh api': for what the CLI does not wrap yet, and for scripts.
The URL and API key are the CLI's own (the current context, or --url and
--api-key); PATH is below the server's URL, e.g. /v1/sandboxes.

The method is GET, or POST when fields or --input are given (but GET with
--paginate); name it as the first argument or with -X. Fields make a JSON object body (for GET, the
query string instead): -f key=value sends a string, -F key=value a typed
value (true, false, null and numbers as JSON; @FILE a file's content, @- stdin).
--input FILE sends a file as the body (- for stdin).

An error answer prints error: and hint: from the API's envelope and exits
with the CLI's codes (3 not found, 4 auth, 5 limit, 1 otherwise). A
failed answer that is not boxkite's (a proxy's error page, another web
server at the URL, a gateway's JSON) is printed as it came, with error:
and hint: on stderr, and exits by its status the same way.
--paginate follows the pages of a paged route: the rel="next" link of a
route that gives one (/v1/sandboxes with limit), or, for an object with
offset, total and a list (such as /v1/sandboxes/ID/log), the next offset
until the list is empty or total is reached; it prints each page.`,
		Example: `  boxkite api /v1/sandboxes
  boxkite api /v1/sandboxes --jq '.[] | select(.status == "active") | .id'
  boxkite api POST /v1/sandboxes -f label=scratch -F lifetime_minutes=30
  boxkite api -X DELETE /v1/sandboxes/3f2a
  boxkite api /v1/sandboxes/3f2a/log -f limit=100 --paginate --jq '.entries[].operation'
  boxkite api /v1/sandboxes -f limit=100 --paginate --jq '.[].id'
  boxkite api PATCH /v1/account --input settings.json`,
		GroupID: groupSettings,
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return fmt.Errorf("give a PATH, optionally after a METHOD: boxkite api [METHOD] PATH")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.out.wantJSON(cmd); err != nil {
				return err
			}
			method, path, err := opts.methodAndPath(cmd, args)
			if err != nil {
				return err
			}
			req, err := opts.request(app, method, path)
			if err != nil {
				return err
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			return runAPI(cmd.Context(), app, c, &opts, req)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.method, "method", "X", "", "the HTTP `method` (default GET, or POST with fields or --input but not --paginate)")
	f.StringArrayVarP(&opts.rawFields, "raw-field", "f", nil, "add a string field, `key=value` (repeatable)")
	f.StringArrayVarP(&opts.fields, "field", "F", nil, "add a typed field, `key=value`: true, false, null, numbers, @FILE (repeatable)")
	f.StringArrayVarP(&opts.headers, "header", "H", nil, "add a request header, `'Name: value'` (repeatable)")
	f.StringVar(&opts.input, "input", "", "send this `file` as the request body (- for stdin)")
	f.BoolVar(&opts.paginate, "paginate", false, "follow the pages of a paged route and print each")
	f.BoolVarP(&opts.include, "include", "i", false, "print the status line and headers before the body")
	opts.out.registerFilters(cmd)
	return cmd
}

// apiRequest is one request `boxkite api` makes (the first of a paged run).
type apiRequest struct {
	method string
	path   string     // without the query
	query  url.Values // the query; fields of a GET go here
	header http.Header
	body   []byte // nil: no body
}

func (o *apiOptions) methodAndPath(cmd *cobra.Command, args []string) (string, string, error) {
	method, path := o.method, args[len(args)-1]
	if len(args) == 2 {
		if o.method != "" && !strings.EqualFold(o.method, args[0]) {
			return "", "", usageErrorf(helpHint(cmd), "two methods given: %s and -X %s", args[0], o.method)
		}
		method = args[0]
	}
	if method == "" {
		method = http.MethodGet
		if (len(o.fields)+len(o.rawFields) > 0 && !o.paginate) || o.input != "" {
			method = http.MethodPost
		}
	}
	method = strings.ToUpper(method)
	if !isToken(method) {
		return "", "", usageErrorf("use GET, POST, PUT, PATCH or DELETE", "invalid method %q", method)
	}
	// "//host/path" is a URL too (scheme-relative): the client would refuse
	// it, but as a usage mistake it deserves the same answer as https://.
	if strings.Contains(path, "://") || strings.HasPrefix(path, "//") {
		return "", "", usageErrorf("give the path only, e.g. /v1/sandboxes: the server is the one configured ('boxkite config show')",
			"%s is a URL, not a path", path)
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return method, path, nil
}

// isToken reports whether s is an HTTP method token (letters only here).
func isToken(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < 'A' || r > 'Z' }) < 0
}

// request builds the request from the flags.
func (o *apiOptions) request(app *App, method, path string) (apiRequest, error) {
	req := apiRequest{method: method, header: http.Header{}}
	p, rawQuery, _ := strings.Cut(path, "?")
	req.path = p
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return req, usageErrorf("write the query as key=value&key=value", "invalid query in %s: %v", path, err)
	}
	req.query = q
	for _, h := range o.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return req, usageErrorf("write it as -H 'Name: value'", "invalid --header %q", h)
		}
		req.header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	fields, err := o.fieldValues(app)
	if err != nil {
		return req, err
	}
	switch {
	case o.input != "" && len(fields) > 0:
		return req, usageErrorf("put the fields in the --input file, or drop --input", "fields and --input do not go together")
	case o.input != "":
		if req.body, err = readInput(app, o.input); err != nil {
			return req, err
		}
	case len(fields) > 0 && (method == http.MethodGet || method == http.MethodHead):
		for _, kv := range fields {
			req.query.Add(kv.key, fmt.Sprint(kv.value))
		}
	case len(fields) > 0:
		obj := map[string]any{}
		for _, kv := range fields {
			obj[kv.key] = kv.value
		}
		if req.body, err = json.Marshal(obj); err != nil {
			return req, fmt.Errorf("encode the fields: %w", err)
		}
	}
	if req.body != nil && req.header.Get("Content-Type") == "" {
		req.header.Set("Content-Type", "application/json")
	}
	return req, nil
}

type apiField struct {
	key   string
	value any
}

// fieldValues parses -f (strings) and -F (typed) in the order given per kind.
func (o *apiOptions) fieldValues(app *App) ([]apiField, error) {
	var out []apiField
	for _, kv := range o.rawFields {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("write it as -f key=value", "invalid field %q", kv)
		}
		out = append(out, apiField{k, v})
	}
	for _, kv := range o.fields {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("write it as -F key=value", "invalid field %q", kv)
		}
		val, err := typedField(app, v)
		if err != nil {
			return nil, err
		}
		out = append(out, apiField{k, val})
	}
	return out, nil
}

// typedField is -F's value: JSON literals and integers as such, @FILE as
// the file's content, anything else as a string.
func typedField(app *App, v string) (any, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && strings.ContainsAny(v, ".eE") {
		return f, nil
	}
	if name, ok := strings.CutPrefix(v, "@"); ok {
		b, err := readInput(app, name)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	}
	return v, nil
}

// readInput reads a file, or stdin for "-".
func readInput(app *App, name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(app.IO.In)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		// The user named this file on the command line (@FILE, --input):
		// one that is missing or unreadable is a usage mistake, exit 2.
		return nil, &usageError{err: fmt.Errorf("read %s: %w", name, err), hint: "give an existing file, or - for stdin"}
	}
	return b, nil
}

// rawDoer is what `boxkite api` needs of the client.
type rawDoer interface {
	Do(ctx context.Context, method, pathAndQuery string, header http.Header, body io.Reader) (*client.RawResponse, error)
}

// runAPI makes the request (and, with --paginate, the next ones) and
// prints each answer.
func runAPI(ctx context.Context, app *App, c rawDoer, o *apiOptions, req apiRequest) error {
	for page := 0; ; page++ {
		target := req.path
		if len(req.query) > 0 {
			target += "?" + req.query.Encode()
		}
		var body io.Reader
		if req.body != nil {
			body = bytes.NewReader(req.body)
		}
		resp, err := c.Do(ctx, req.method, target, req.header, body)
		if err != nil {
			err = fmt.Errorf("%s %s: %w", req.method, req.path, err)
			if re, ok := errors.AsType[*client.RawError](err); ok {
				printRawError(app, o, re)
				return &rawAnswerError{err: err, status: re.Err.Status}
			}
			return withRoutesHint(err)
		}
		link := api.NextLink(resp.Header)
		next, err := printAPIResponse(app, o, resp)
		if err != nil {
			return err
		}
		if !o.paginate || req.method != http.MethodGet {
			return nil
		}
		if q, ok := nextLinkQuery(link, req.query); ok {
			req.query = q // a cursor route (GET /v1/sandboxes?limit=N)
			continue
		}
		if next < 0 {
			return nil
		}
		req.query.Set("offset", strconv.Itoa(next))
	}
}

// nextLinkQuery returns the query of a Link rel="next" target, when there
// is one that moves on from the query asked (a link back to the same
// page would loop). Only the query is taken: the path stays the one
// asked, relative to the context's URL, so the key goes nowhere else.
func nextLinkQuery(link string, asked url.Values) (url.Values, bool) {
	if link == "" {
		return nil, false
	}
	u, err := url.Parse(link)
	if err != nil || u.RawQuery == "" || u.Query().Encode() == asked.Encode() {
		return nil, false
	}
	return u.Query(), true
}

// printRawError prints, as gh api does, the body (and with -i the status
// and headers) of a failed answer that is not boxkite's envelope: a
// proxy's error page, another web server's 404, a gateway's JSON. The
// error and its hint still go to stderr; boxkite's own error envelope is
// not printed, its error: and hint: say it all.
func printRawError(app *App, o *apiOptions, re *client.RawError) {
	if o.include {
		printStatusHeaders(app, re.Err.Status, re.Header)
	}
	if len(re.Body) == 0 {
		return
	}
	app.IO.Out.Write(re.Body)
	if !bytes.HasSuffix(re.Body, []byte("\n")) {
		fmt.Fprintln(app.IO.Out)
	}
}

// printStatusHeaders prints an answer's status line and headers, then a
// blank line (-i).
func printStatusHeaders(app *App, status int, header http.Header) {
	fmt.Fprintf(app.IO.Out, "HTTP %d %s\n", status, http.StatusText(status))
	for _, k := range slices.Sorted(maps.Keys(header)) {
		for _, v := range header[k] {
			fmt.Fprintf(app.IO.Out, "%s: %s\n", k, v)
		}
	}
	fmt.Fprintln(app.IO.Out)
}

// withRoutesHint gives the server's "no route" 404, which has no hint of
// its own, one that says where the routes are.
func withRoutesHint(err error) error {
	if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeNotFound && e.Hint == "" && strings.HasPrefix(e.Message, "no route for ") {
		return &hintError{err: err, hint: "the server has no such path: 'boxkite api /openapi.json' lists its routes, docs/routes.md describes them"}
	}
	return err
}

// printAPIResponse prints one answer and returns the offset of the next
// page, or -1 when there is none (or the answer is not paged).
func printAPIResponse(app *App, o *apiOptions, resp *client.RawResponse) (int, error) {
	defer resp.Body.Close()
	if o.include {
		printStatusHeaders(app, resp.Status, resp.Header)
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		// Event streams, archives, text: as they come.
		_, err := io.Copy(app.IO.Out, resp.Body)
		return -1, err
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1, fmt.Errorf("read the answer: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return -1, nil
	}
	var data any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		_, err := app.IO.Out.Write(b) // not JSON after all: print it as it is
		return -1, err
	}
	switch {
	case o.out.query != nil:
		err = runJQ(app.IO, o.out.query, data)
	case o.out.template != nil:
		err = runTemplate(app.IO, o.out.template, data)
	case app.IO.OutTTY:
		err = writeJSON(app.IO.Out, data)
	default:
		_, err = app.IO.Out.Write(append(bytes.TrimRight(b, "\n"), '\n'))
	}
	return nextOffset(data), err
}

// nextOffset reads the paging of a limit/offset route's answer: an object
// with numeric offset and total and one list. The next page starts after
// the items of this one; there is none when the list is empty or total is
// reached. Anything else (a plain list, an object without paging) is one page.
func nextOffset(data any) int {
	obj, ok := data.(map[string]any)
	if !ok {
		return -1
	}
	offset, okOffset := jsonInt(obj["offset"])
	total, okTotal := jsonInt(obj["total"])
	if !okOffset || !okTotal {
		return -1
	}
	items := -1
	for _, v := range obj {
		if list, ok := v.([]any); ok {
			if items >= 0 {
				return -1 // two lists: which one pages is not clear
			}
			items = len(list)
		}
	}
	if items <= 0 || offset+items >= total {
		return -1
	}
	return offset + items
}

func jsonInt(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n.String())
	return i, err == nil
}
