package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seen is one request the fake API received.
type seen struct {
	method, path, query, auth, header, body string
}

// TestAPICommand drives boxkite api against a fake API (issue 28,
// acceptance 3): methods, fields, headers, input, errors and paging.
func TestAPICommand(t *testing.T) {
	home := isolate(t)
	var (
		mu   sync.Mutex
		reqs []seen
	)
	remember := func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Extra"), string(b)})
		mu.Unlock()
	}
	entries := []string{"a", "b", "c", "d", "e"}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.URL.Query().Get("limit") == "1" && r.URL.Query().Get("cursor") == "":
				w.Header().Set("Link", `</v1/sandboxes?cursor=c1&limit=1>; rel="next"`)
				io.WriteString(w, `[{"id":"aaa111","label":"one"}]`+"\n")
			case r.URL.Query().Get("cursor") == "c1":
				io.WriteString(w, `[{"id":"bbb222"}]`+"\n")
			default:
				io.WriteString(w, `[{"id":"aaa111","label":"one"},{"id":"bbb222"}]`+"\n")
			}
		},
		"POST /v1/sandboxes": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			replyJSON(201, map[string]string{"id": "new1"})(w, r)
		},
		"DELETE /v1/sandboxes/{id}": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			w.WriteHeader(http.StatusNoContent)
		},
		"GET /v1/sandboxes/{id}": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			replyJSON(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "sandbox nope not found", "hint": "list them with GET /v1/sandboxes"}})(w, r)
		},
		"GET /v1/gone": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			replyJSON(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "no route for GET /v1/gone"}})(w, r)
		},
		"GET /v1/behind-proxy": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		},
		"GET /v1/behind-gateway": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			replyJSON(403, map[string]string{"message": "Forbidden"})(w, r)
		},
		"GET /v1/sandboxes/{id}/log": func(w http.ResponseWriter, r *http.Request) {
			remember(r)
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			page := []map[string]string{}
			for i := offset; i < min(offset+limit, len(entries)); i++ {
				page = append(page, map[string]string{"operation": entries[i]})
			}
			replyJSON(200, map[string]any{"entries": page, "limit": limit, "offset": offset, "total": len(entries)})(w, r)
		},
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_secret")
	input := filepath.Join(home, "body.json")
	if err := os.WriteFile(input, []byte(`{"label":"from-file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(home, "missing.txt")
	note := filepath.Join(home, "note.txt")
	if err := os.WriteFile(note, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantOut  string
		wantErr  string
		wantCode int
		wantReqs []seen
	}{
		{
			name: "GET prints the JSON as answered", args: []string{"/v1/sandboxes"},
			wantOut:  `[{"id":"aaa111","label":"one"},{"id":"bbb222"}]` + "\n",
			wantReqs: []seen{{method: "GET", path: "/v1/sandboxes", auth: "Bearer bxk_live_secret"}},
		},
		{
			name: "a path without its slash, and jq", args: []string{"v1/sandboxes", "--jq", ".[].id"},
			wantOut:  "aaa111\nbbb222\n",
			wantReqs: []seen{{method: "GET", path: "/v1/sandboxes", auth: "Bearer bxk_live_secret"}},
		},
		{
			name: "fields make a POST with a JSON body", args: []string{"/v1/sandboxes", "-f", "label=x", "-F", "lifetime_minutes=30", "-F", "gpu=false", "-F", "note=@" + note},
			wantOut:  "{\"id\":\"new1\"}\n",
			wantReqs: []seen{{method: "POST", path: "/v1/sandboxes", auth: "Bearer bxk_live_secret", body: `{"gpu":false,"label":"x","lifetime_minutes":30,"note":"hello\n"}`}},
		},
		{
			name: "method as the first argument, and a header", args: []string{"delete", "/v1/sandboxes/aaa111", "-H", "X-Extra: yes"},
			wantReqs: []seen{{method: "DELETE", path: "/v1/sandboxes/aaa111", auth: "Bearer bxk_live_secret", header: "yes"}},
		},
		{
			name: "--input from stdin", args: []string{"-X", "POST", "/v1/sandboxes", "--input", "-"}, stdin: `{"label":"piped"}`,
			wantOut:  "{\"id\":\"new1\"}\n",
			wantReqs: []seen{{method: "POST", path: "/v1/sandboxes", auth: "Bearer bxk_live_secret", body: `{"label":"piped"}`}},
		},
		{
			name: "--input from a file", args: []string{"POST", "/v1/sandboxes", "--input", input},
			wantOut:  "{\"id\":\"new1\"}\n",
			wantReqs: []seen{{method: "POST", path: "/v1/sandboxes", auth: "Bearer bxk_live_secret", body: `{"label":"from-file"}`}},
		},
		{
			name: "the error envelope becomes error:, hint: and exit 3", args: []string{"/v1/sandboxes/nope"}, wantCode: exitNotFound,
			wantErr:  "error: GET /v1/sandboxes/nope: sandbox nope not found [not_found]\nhint: list them with GET /v1/sandboxes\n",
			wantReqs: []seen{{method: "GET", path: "/v1/sandboxes/nope", auth: "Bearer bxk_live_secret"}},
		},
		{
			name: "a path the server has no route for: exit 3, and where the routes are", args: []string{"/v1/gone"}, wantCode: exitNotFound,
			wantErr:  "error: GET /v1/gone: no route for GET /v1/gone [not_found]\nhint: the server has no such path: 'boxkite api /openapi.json' lists its routes, docs/routes.md describes them\n",
			wantReqs: []seen{{method: "GET", path: "/v1/gone", auth: "Bearer bxk_live_secret"}},
		},
		{
			// As gh api: the page on stdout, the error and hint on stderr.
			name: "an answer that is not boxkite's is printed, error: and hint: on stderr, exit 1", args: []string{"/v1/behind-proxy"}, wantCode: exitError,
			wantOut:  "<html><body><h1>502 Bad Gateway</h1></body></html>\n",
			wantErr:  "answered 502 text/html, not boxkite's JSON [bad_response]\nhint: check the base URL",
			wantReqs: []seen{{method: "GET", path: "/v1/behind-proxy", auth: "Bearer bxk_live_secret"}},
		},
		{
			// An API gateway's own JSON, not the envelope: printed too.
			name: "JSON that is not the envelope is printed, exit by its status", args: []string{"/v1/behind-gateway"}, wantCode: exitAuth,
			wantOut:  `{"message":"Forbidden"}` + "\n",
			wantErr:  "error: GET /v1/behind-gateway: unexpected response from the server: 403 Forbidden [forbidden]\n",
			wantReqs: []seen{{method: "GET", path: "/v1/behind-gateway", auth: "Bearer bxk_live_secret"}},
		},
		{
			name: "--paginate follows offset until total", args: []string{"/v1/sandboxes/x/log", "-f", "limit=2", "--paginate", "--jq", ".entries[].operation"},
			wantOut: "a\nb\nc\nd\ne\n",
			wantReqs: []seen{
				{method: "GET", path: "/v1/sandboxes/x/log", query: "limit=2", auth: "Bearer bxk_live_secret"},
				{method: "GET", path: "/v1/sandboxes/x/log", query: "limit=2&offset=2", auth: "Bearer bxk_live_secret"},
				{method: "GET", path: "/v1/sandboxes/x/log", query: "limit=2&offset=4", auth: "Bearer bxk_live_secret"},
			},
		},
		{
			name: "--paginate on a plain list is one page", args: []string{"/v1/sandboxes?active_only=true", "--paginate", "-q", "length"},
			wantOut:  "2\n",
			wantReqs: []seen{{method: "GET", path: "/v1/sandboxes", query: "active_only=true", auth: "Bearer bxk_live_secret"}},
		},
		{
			name: "--paginate follows the Link rel=next of a cursor route", args: []string{"/v1/sandboxes", "-f", "limit=1", "--paginate", "--jq", ".[].id"},
			wantOut: "aaa111\nbbb222\n",
			wantReqs: []seen{
				{method: "GET", path: "/v1/sandboxes", query: "limit=1", auth: "Bearer bxk_live_secret"},
				{method: "GET", path: "/v1/sandboxes", query: "cursor=c1&limit=1", auth: "Bearer bxk_live_secret"},
			},
		},
		{name: "a full URL is refused", args: []string{"https://elsewhere.example/v1/sandboxes"}, wantCode: exitUsage, wantErr: "is a URL, not a path"},
		{
			name: "a URL without its scheme is refused as one", args: []string{"//elsewhere.example/v1/sandboxes"}, wantCode: exitUsage,
			wantErr: "error: //elsewhere.example/v1/sandboxes is a URL, not a path\nhint: give the path only",
		},
		{name: "two methods", args: []string{"GET", "/v1/sandboxes", "-X", "POST"}, wantCode: exitUsage, wantErr: "two methods given"},
		{name: "a bad field", args: []string{"/v1/sandboxes", "-f", "novalue"}, wantCode: exitUsage, wantErr: `invalid field "novalue"`},
		{name: "a bad header", args: []string{"/v1/sandboxes", "-H", "nocolon"}, wantCode: exitUsage, wantErr: "invalid --header"},
		{name: "fields and --input", args: []string{"/v1/sandboxes", "-f", "a=b", "--input", input}, wantCode: exitUsage, wantErr: "do not go together"},
		// A file the user names that is not there is a mistake on the
		// command line: exit 2 with a hint, and nothing sent.
		{name: "a missing @FILE", args: []string{"/v1/sandboxes", "-F", "note=@" + missing}, wantCode: exitUsage, wantErr: "no such file or directory\nhint: give an existing file"},
		{name: "a missing --input", args: []string{"POST", "/v1/sandboxes", "--input", missing}, wantCode: exitUsage, wantErr: "no such file or directory\nhint: give an existing file"},
		{name: "a directory as @FILE", args: []string{"/v1/sandboxes", "-F", "note=@" + home}, wantCode: exitUsage, wantErr: "is a directory\nhint: give an existing file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			reqs = nil
			mu.Unlock()
			r := runCLI(t, tt.stdin, append([]string{"api"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			if diff := cmp.Diff(tt.wantOut, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.wantErr)
			}
			mu.Lock()
			got := reqs
			mu.Unlock()
			if diff := cmp.Diff(tt.wantReqs, got, cmp.AllowUnexported(seen{})); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextOffset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want int
	}{
		{`{"entries":[1,2],"offset":0,"total":5}`, 2},
		{`{"entries":[1],"offset":4,"total":5}`, -1},
		{`{"entries":[],"offset":5,"total":9}`, -1},
		{`{"entries":[1,2],"offset":0}`, -1},
		{`{"a":[1],"b":[2],"offset":0,"total":5}`, -1},
		{`[1,2,3]`, -1},
		{`"x"`, -1},
	}
	for _, tt := range tests {
		dec := json.NewDecoder(strings.NewReader(tt.body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if got := nextOffset(v); got != tt.want {
			t.Errorf("nextOffset(%s) = %d, want %d", tt.body, got, tt.want)
		}
	}
}
