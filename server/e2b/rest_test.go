package e2b

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestListFilterMetadata decodes the SDK's triple-encoded metadata
// filter; the first case is a capture of e2b 2.51.0's request for
// {"k y": "v&1"} (contract §2.2).
func TestListFilterMetadata(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rawQuery string
		want     map[string]string
	}{
		{"metadata=k%252520y%3Dv%2525261&state=running,paused&limit=10", map[string]string{"k y": "v&1"}},
		{"metadata=suite%3Dflows%26run%3D42", map[string]string{"suite": "flows", "run": "42"}},
		{"", map[string]string{}},
	}
	for _, tt := range tests {
		q, err := url.ParseQuery(tt.rawQuery)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parseListFilter(q)
		if err != nil {
			t.Fatalf("parseListFilter(%s): %v", tt.rawQuery, err)
		}
		if diff := cmp.Diff(tt.want, f.metadata); diff != "" {
			t.Errorf("metadata of %s (-want +got):\n%s", tt.rawQuery, diff)
		}
	}
}

// TestListQueryRefused: a list query the filter cannot read is refused,
// not read as no filter (metadata=%zz listed every sandbox; an unknown
// state listed none).
func TestListQueryRefused(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"metadata=%zz", "metadata=k%3Dv&x=%g1", "state=weird", "state=running,weird"} {
		if _, err := parseListQuery(raw); err == nil {
			t.Errorf("%s: no error, want it refused", raw)
		}
	}
	if f, err := parseListQuery("metadata=k%3Dv&state=paused"); err != nil || f.metadata["k"] != "v" || f.running || !f.paused {
		t.Errorf("a good query: %+v, %v", f, err)
	}
}

func TestListFilter(t *testing.T) {
	t.Parallel()
	now := time.Now()
	sb := Sandbox{ID: "a", CreatedAt: now}
	rec := Record{TemplateID: "base", Metadata: map[string]string{"k": "v"}}
	tests := []struct {
		query string
		match bool
	}{
		{"", true},
		{"state=running", true},
		{"state=paused", false},
		{"state=running,paused", true},
		{"metadata=k%3Dv", true},
		{"metadata=k%3Dw", false},
		{"metadata=other%3Dv", false},
		{"template=base", true},
		{"template=code-interpreter-v1", false},
		{"startedAfter=" + url.QueryEscape(now.Add(-time.Minute).Format(time.RFC3339Nano)), true},
		{"startedAfter=" + url.QueryEscape(now.Add(time.Minute).Format(time.RFC3339Nano)), false},
	}
	paused := Sandbox{ID: "p", CreatedAt: now, Paused: true}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		f, err := parseListFilter(q)
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		if got := f.match(sb, rec); got != tt.match {
			t.Errorf("%s: match = %v, want %v", tt.query, got, tt.match)
		}
	}
	for query, want := range map[string]bool{"": true, "state=running": false, "state=paused": true, "state=running,paused": true} {
		q, _ := url.ParseQuery(query)
		f, err := parseListFilter(q)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.match(paused, rec); got != want {
			t.Errorf("paused sandbox, %q: match = %v, want %v", query, got, want)
		}
	}
	for _, bad := range []string{"limit=0", "limit=x", "order=up", "startedAfter=yesterday", "nextToken=***", "metadata=%25zz"} {
		q, _ := url.ParseQuery(bad)
		if _, err := parseListFilter(q); err == nil {
			t.Errorf("parseListFilter(%s) accepted it", bad)
		}
	}
}

func FuzzParseListFilter(f *testing.F) {
	for _, s := range []string{"k%252520y%3Dv%2525261", "a%3Db%26c%3Dd", "%", "=&=", "a=%zz"} {
		f.Add(s, "running", "10", "")
	}
	f.Fuzz(func(t *testing.T, metadata, state, limit, token string) {
		f, err := parseListFilter(url.Values{"metadata": {metadata}, "state": {state}, "limit": {limit}, "nextToken": {token}})
		if err == nil && (f.limit < 1 || f.limit > maxPageLimit) {
			t.Errorf("limit %d out of range", f.limit)
		}
	})
}

func TestValidateCreate(t *testing.T) {
	t.Parallel()
	yes, no, zero := true, false, 0
	tests := []struct {
		name   string
		req    newSandbox
		status int // 0: accepted
	}{
		{"defaults", newSandbox{}, 0},
		{"no internet, as boxkite is", newSandbox{AllowInternetAccess: &no, Network: &networkConfig{DenyOut: []string{"0.0.0.0/0"}}}, 0},
		{"internet", newSandbox{AllowInternetAccess: &yes}, http.StatusNotImplemented},
		{"allowOut", newSandbox{Network: &networkConfig{AllowOut: []string{"example.com"}}}, http.StatusNotImplemented},
		{"auto-pause", newSandbox{AutoPause: &yes}, 0},
		{"auto-pause off", newSandbox{AutoPause: &no}, 0},
		{"auto-pause keeping memory", newSandbox{AutoPause: &yes, AutoPauseMemory: &yes}, http.StatusNotImplemented},
		{"auto-pause dropping memory", newSandbox{AutoPause: &yes, AutoPauseMemory: &no}, 0},
		{"auto-resume", newSandbox{AutoResume: &struct{ Enabled bool }{true}}, http.StatusNotImplemented},
		{"volumes", newSandbox{VolumeMounts: []any{map[string]string{"name": "v", "path": "/v"}}}, http.StatusNotImplemented},
		{"mcp", newSandbox{MCP: map[string]any{}}, http.StatusNotImplemented},
		{"zero timeout", newSandbox{Timeout: &zero}, http.StatusUnprocessableEntity},
		{"env name with =", newSandbox{EnvVars: map[string]string{"A=B": "x"}}, http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		err := validateCreate(tt.req)
		status := 0
		if err != nil {
			e, ok := err.(*api.Error)
			if !ok {
				t.Fatalf("%s: %v is not an *api.Error", tt.name, err)
			}
			status = e.Status
			if status == 0 {
				status = api.StatusOf(e.Code)
			}
		}
		if status != tt.status {
			t.Errorf("%s: status %d (%v), want %d", tt.name, status, err, tt.status)
		}
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	for hdr, want := range map[string]string{"X-API-Key: k1": "k1", "Authorization: Bearer k2": "k2", "Authorization: bearer  k3 ": "k3", "Authorization: Basic x": ""} {
		r, _ := http.NewRequest("GET", "/", nil)
		k, v, _ := strings.Cut(hdr, ": ")
		r.Header.Set(k, v)
		if got := apiKey(r); got != want {
			t.Errorf("apiKey(%s) = %q, want %q", hdr, got, want)
		}
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path   string
		header bool
		want   bool
	}{
		{"/v2/sandboxes", false, true},
		{"/sandboxes/x/timeout", false, true},
		{"/v1/sandboxes", false, false},
		{"/health", false, false},
		{"/health", true, true},
		{"/files?path=a&signature=v1_x", false, true},
		{"/files?path=a", false, false},
		{"/sandboxesx", false, false},
	}
	for _, tt := range tests {
		r, _ := http.NewRequest("GET", tt.path, nil)
		if tt.header {
			r.Header.Set("E2b-Sandbox-Id", "sb")
		}
		if got := Matches(r); got != tt.want {
			t.Errorf("Matches(%s, header %v) = %v, want %v", tt.path, tt.header, got, tt.want)
		}
	}
}

// TestSandboxDomain: the SDK builds envd's URL from the domain when
// E2B_SANDBOX_URL is unset, so it must never be null (the SDK would fall
// back to e2b.app) and follows E2B's api.<domain> layout.
func TestSandboxDomain(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"127.0.0.1:8090":          "127.0.0.1:8090",
		"api.boxkite.example.com": "boxkite.example.com",
		"api.example.com:8443":    "example.com:8443",
		"boxkite.example.com":     "boxkite.example.com",
	} {
		if got := sandboxDomain(host); got == nil || *got != want {
			t.Errorf("sandboxDomain(%q) = %v, want %q", host, got, want)
		}
	}
}
