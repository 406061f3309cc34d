package e2bsdk

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/e2b/envd"
)

// otherTenantRow is how one control-plane route must answer another
// account about a sandbox ({id} in path).
type otherTenantRow struct {
	path, body string
	// want is the status: 404 with {"code": 404} for a route naming the
	// sandbox, exactly as for a sandbox that does not exist.
	want int
}

// otherTenantRows has a row for every route of e2b.Routes.
func otherTenantRows() map[string]otherTenantRow {
	return map[string]otherTenantRow{
		"POST /sandboxes":                {"/sandboxes", `{"templateID":"base","timeout":60}`, http.StatusCreated},
		"POST /v2/sandboxes":             {"/v2/sandboxes", `{"templateID":"base","timeout":60}`, http.StatusCreated},
		"GET /sandboxes":                 {"/sandboxes", "", http.StatusOK},
		"GET /v2/sandboxes":              {"/v2/sandboxes?state=running,paused", "", http.StatusOK},
		"GET /sandboxes/{id}":            {"/sandboxes/{id}", "", http.StatusNotFound},
		"DELETE /sandboxes/{id}":         {"/sandboxes/{id}", "", http.StatusNotFound},
		"POST /sandboxes/{id}/timeout":   {"/sandboxes/{id}/timeout", `{"timeout":60}`, http.StatusNotFound},
		"POST /sandboxes/{id}/refreshes": {"/sandboxes/{id}/refreshes", `{"duration":60}`, http.StatusNotFound},
		"POST /v2/sandboxes/{id}/connect": {
			"/v2/sandboxes/{id}/connect", `{"timeout":60}`, http.StatusNotFound,
		},
		"POST /sandboxes/{id}/connect":   {"/sandboxes/{id}/connect", `{}`, http.StatusNotFound},
		"POST /sandboxes/{id}/resume":    {"/sandboxes/{id}/resume", `{}`, http.StatusNotFound},
		"POST /sandboxes/{id}/pause":     {"/sandboxes/{id}/pause", `{}`, http.StatusNotFound},
		"GET /sandboxes/{id}/metrics":    {"/sandboxes/{id}/metrics", "", http.StatusNotFound},
		"PUT /sandboxes/{id}/network":    {"/sandboxes/{id}/network", `{}`, http.StatusNotFound},
		"POST /sandboxes/{id}/snapshots": {"/sandboxes/{id}/snapshots", `{}`, http.StatusNotFound},
		"POST /sandboxes/{id}/fork":      {"/sandboxes/{id}/fork", `{}`, http.StatusNotFound},
		// The caller's own snapshots (none), with or without another's sandbox.
		"GET /snapshots":         {"/snapshots?sandboxID={id}", "", http.StatusOK},
		"DELETE /templates/{id}": {"/templates/{id}", "", http.StatusNotFound},
		// Not about a sandbox, and not supported.
		"/volumes":        {"/volumes", "", http.StatusNotImplemented},
		"/volumes/":       {"/volumes/{id}", "", http.StatusNotImplemented},
		"/volumecontent/": {"/volumecontent/{id}/dir", "", http.StatusNotImplemented},
		"/secrets":        {"/secrets", "", http.StatusNotImplemented},
		"/secrets/":       {"/secrets/{id}", "", http.StatusNotImplemented},
		"/templates":      {"/templates", "", http.StatusNotImplemented},
		"/templates/":     {"/templates/{id}", "", http.StatusNotImplemented},
		"/v2/templates/":  {"/v2/templates/{id}", "", http.StatusNotImplemented},
		"/v3/templates":   {"/v3/templates", "", http.StatusNotImplemented},
	}
}

// CheckOtherTenant checks the control-plane half of issue 21's second
// acceptance item on every route of e2b.Routes (a route without a row in
// otherTenantRows fails): with another account's key, as X-API-Key and as
// a Bearer token, each route naming sandbox id answers 404 with
// {"code": 404} (the SDK's NotFoundError; kill's false) and the same
// message as for a sandbox that does not exist; the others answer
// without a word of id. The sandbox's owner still finds it afterwards.
func CheckOtherTenant(t *testing.T, base, ownerKey, otherKey, id string) {
	t.Helper()
	routes, rows := e2b.Routes(), otherTenantRows()
	for pattern := range rows {
		if !slices.Contains(routes, pattern) {
			t.Errorf("otherTenantRows has a row for %q, which is not a route", pattern)
		}
	}
	eachRoute(t, otherKey, func(pattern, method string, row otherTenantRow, auth http.Header) {
		status, body := Do(t, base, method, strings.ReplaceAll(row.path, "{id}", id), auth, row.body)
		var e struct {
			Code    int
			Message string
		}
		if status != row.want {
			t.Errorf("%s as another account: %d %s, want %d", pattern, status, body, row.want)
		}
		if status >= 300 && (json.Unmarshal(body, &e) != nil || e.Code != status) {
			t.Errorf("%s as another account: body %s, want E2B's {code: %d, message}", pattern, body, status)
		}
		if row.want != http.StatusNotFound {
			if strings.Contains(string(body), id) {
				t.Errorf("%s as another account names the sandbox: %s", pattern, body)
			}
			return
		}
		const none = "00000000-0000-0000-0000-000000000000"
		_, body2 := Do(t, base, method, strings.ReplaceAll(row.path, "{id}", none), auth, row.body)
		if got, want := strings.ReplaceAll(string(body), id, "ID"), strings.ReplaceAll(string(body2), none, "ID"); got != want {
			t.Errorf("%s: another account's sandbox answers %s, one that does not exist %s", pattern, got, want)
		}
	})
	if status, body := Do(t, base, http.MethodGet, "/sandboxes/"+id, http.Header{"X-API-Key": {ownerKey}}, ""); status != http.StatusOK {
		t.Errorf("the owner's get after the other account's calls: %d %s", status, body)
	}
}

// CheckKeyRefused checks every route of e2b.Routes with a key the
// control plane no longer accepts (revoked, or its holder removed from
// its organization), as X-API-Key and as a Bearer token: each answers
// 401 with E2B's {"code": 401} and without a word of sandbox id.
func CheckKeyRefused(t *testing.T, base, key, id string) {
	t.Helper()
	eachRoute(t, key, func(pattern, method string, row otherTenantRow, auth http.Header) {
		status, body := Do(t, base, method, strings.ReplaceAll(row.path, "{id}", id), auth, row.body)
		var e struct{ Code int }
		if status != http.StatusUnauthorized || json.Unmarshal(body, &e) != nil || e.Code != status {
			t.Errorf("%s with a refused key: %d %s, want E2B's 401", pattern, status, body)
		}
		if strings.Contains(string(body), id) {
			t.Errorf("%s with a refused key names the sandbox: %s", pattern, body)
		}
	})
}

// eachRoute calls check for every route of e2b.Routes with its row of
// otherTenantRows (a route without one is an error), once with key as
// X-API-Key and once as a Bearer token.
func eachRoute(t *testing.T, key string, check func(pattern, method string, row otherTenantRow, auth http.Header)) {
	t.Helper()
	rows := otherTenantRows()
	for _, pattern := range e2b.Routes() {
		row, ok := rows[pattern]
		if !ok {
			t.Errorf("route %q has no row in otherTenantRows (internal/e2bsdk): add one", pattern)
			continue
		}
		method, _, ok := strings.Cut(pattern, " ")
		if !ok {
			method = http.MethodGet
		}
		for _, auth := range []http.Header{{"X-API-Key": {key}}, {"Authorization": {"Bearer " + key}}} {
			check(pattern, method, row, auth)
		}
	}
}

// CheckEnvdRefuses checks the envd half of issue 21's second acceptance
// item on every route of envd.Routes, each RPC of both services included:
// a call for sandbox id with no access token, and with each header set of
// bad (another sandbox's token, another account's), is refused with 401
// and Connect's "unauthenticated".
func CheckEnvdRefuses(t *testing.T, base, id string, bad map[string]http.Header) {
	t.Helper()
	bad["no token"] = http.Header{}
	for _, rt := range envd.Routes() {
		path := strings.ReplaceAll(rt.Pattern, "{id}", "x")
		hdr, body := http.Header{}, ""
		switch {
		case rt.Stream:
			hdr.Set("Content-Type", "application/connect+json")
			hdr.Set("Connect-Protocol-Version", "1")
			body = string(Envelope([]byte("{}")))
		case rt.RPC:
			hdr.Set("Content-Type", "application/json")
			hdr.Set("Connect-Protocol-Version", "1")
			body = "{}"
		case path == "/files":
			path += "?path=/workspace/x"
			if rt.Method == http.MethodPost {
				hdr.Set("Content-Type", "application/octet-stream")
				body = "x"
			}
		case rt.Method == http.MethodPost:
			hdr.Set("Content-Type", "application/json")
			body = `{"code":"1"}`
		}
		for name, creds := range bad {
			h := hdr.Clone()
			for k, v := range creds {
				h[k] = v
			}
			h.Set(envd.HeaderSandboxID, id)
			h.Set(envd.HeaderSandboxPort, rt.Port)
			status, got := Do(t, base, rt.Method, path, h, body)
			if status != http.StatusUnauthorized || !strings.Contains(string(got), `"unauthenticated"`) {
				t.Errorf("%s %s (port %s) with %s: %d %s, want 401 unauthenticated", rt.Method, rt.Pattern, rt.Port, name, status, got)
			}
		}
	}
	// A signed /files URL names no sandbox: a forged signature is refused.
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		status, got := Do(t, base, method, "/files?path=/workspace/x&signature=v1_forged&signature_expiration=9999999999", nil, "")
		if status != http.StatusUnauthorized {
			t.Errorf("%s /files with a forged signature: %d %s, want 401", method, status, got)
		}
	}
}

// Do sends one request to base and returns the status and body.
func Do(t testing.TB, base, method, path string, hdr http.Header, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Envelope frames msg as one Connect stream message.
func Envelope(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}
