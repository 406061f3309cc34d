package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestBadInputRefused: a NUL character in any free text of a JSON body (a
// label, a name, an email, metadata, a description…) was stored on SQLite
// and a 500 on PostgreSQL, whose text cannot hold one; so was an {id} in
// the path with a NUL or a byte that is not UTF-8, and an organization's
// quota past an INTEGER column. Each is now refused before anything is
// done, alike on both stores: 422 validation_error naming the field (400
// in E2B's shape on the E2B API), 404 for the id; so is a query
// parameter or a header with a NUL or bytes that are not UTF-8 (which
// reached the store: kept by SQLite, the backstop's 422 on PostgreSQL),
// in OAuth's shape on its protocol endpoints. An exec's stdin is data and
// may hold NUL.
func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	for name, open := range bothStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			e := newEnvWithStore(t, server.Config{
				RateLimits: server.RateLimits{Lifecycle: 1000, Snapshot: 1000},
				MCPOAuth:   true, Operators: []string{"a@example.com"}, Secrets: testSecrets(t, st),
			}, st)
			e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			resp, body := e.do("POST", "/v1/organizations", e.KeyA, `{"name":"acme"}`)
			var org api.Organization
			if err := json.Unmarshal(body, &org); resp.StatusCode != http.StatusCreated || err != nil {
				t.Fatalf("create organization: %d %s", resp.StatusCode, body)
			}
			sbp, orgp := "/v1/sandboxes/"+sb.ID, "/v1/organizations/"+org.ID
			form := []string{"Content-Type", "application/x-www-form-urlencoded"}

			for _, tt := range []struct {
				method, path, body string
				header             []string
				status             int
				field              string // the field the refusal names, in its message and details
			}{
				{"POST", "/v1/sandboxes", `{"label":"a\u0000b"}`, nil, 422, "label"},
				{"POST", "/v1/sandboxes", `{"egress_hosts":["ok.example.com","a\u0000b"]}`, nil, 422, "egress_hosts[1]"},
				{"POST", "/v1/sandboxes", `{"volume_mounts":{"a\u0000b":"/workspace/x"}}`, nil, 422, "volume_mounts"},
				{"POST", sbp + "/exec", `{"command":"echo","description":"a\u0000b"}`, nil, 422, "description"},
				{"POST", sbp + "/exec", `{"command":"echo a\u0000b"}`, nil, 422, "command"},
				{"POST", sbp + "/exec", `{"command":"env","env":{"K":"a\u0000b"}}`, nil, 422, "env.K"},
				{"POST", sbp + "/exec", `{"command":"cat","stdin":"a\u0000b"}`, nil, 200, ""},
				{"POST", sbp + "/snapshots", `{"label":"a\u0000b"}`, nil, 422, "label"},
				{"POST", sbp + "/http-request", `{"url":"https://example.com/\u0000"}`, nil, 422, "url"},
				{"POST", "/v1/volumes", `{"label":"a\u0000b"}`, nil, 422, "label"},
				{"POST", "/v1/mcp-connections", `{"label":"a\u0000b","catalog_id":"github"}`, nil, 422, "label"},
				{"POST", "/v1/webhooks", `{"url":"https://93.184.216.34/h","event_types":["sandbox.created"],"description":"a\u0000b"}`, nil, 422, "description"},
				{"POST", "/v1/webhooks", `{"url":"https://93.184.216.34/h","event_types":["sandbox.created"],"payload_format":"splunk_hec","hec_token":"a\u0000b"}`, nil, 422, "hec_token"},
				{"POST", "/v1/secrets", `{"name":"a\u0000b","value":"v","allowed_hosts":["example.com"]}`, nil, 422, "name"},
				{"POST", "/v1/organizations", `{"name":"a\u0000b"}`, nil, 422, "name"},
				{"PATCH", orgp, `{"name":"a\u0000b"}`, nil, 422, "name"},
				{"POST", orgp + "/invites", `{"email":"a\u0000b@example.com"}`, nil, 422, "email"},
				{"POST", "/v1/api-keys", `{"name":"a\u0000b"}`, nil, 422, "name"},
				{"POST", "/v1/account/ssh-keys", `{"name":"a\u0000b","public_key":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl x"}`, nil, 422, "name"},
				{"POST", "/v1/auth/signup", `{"email":"a\u0000b@example.com","password":"correct horse battery"}`, nil, 422, "email"},
				{"POST", "/v1/auth/login", `{"email":"a\u0000b@example.com","password":"correct horse battery"}`, nil, 422, "email"},
				// An INTEGER column's range, checked by the store on both.
				{"PATCH", orgp, `{"quota":{"max_concurrent_sandboxes":3000000000}}`, nil, 422, ""},
				// An {id} no id can be.
				{"GET", "/v1/sandboxes/%00", "", nil, 404, ""},
				{"GET", "/v1/sandboxes/%FF", "", nil, 404, ""},
				{"GET", "/v1/volumes/%FF", "", nil, 404, ""},
				{"GET", "/v1/snapshots/%FF", "", nil, 404, ""},
				{"DELETE", "/v1/secrets/%FF", "", nil, 404, ""},
			} {
				what := tt.method + " " + tt.path + " " + tt.body
				resp, body := e.do(tt.method, tt.path, e.KeyA, tt.body, tt.header...)
				if resp.StatusCode != tt.status {
					t.Errorf("%s: %d %s, want %d", what, resp.StatusCode, body, tt.status)
					continue
				}
				if tt.status >= 400 {
					ae := apiError(t, body)
					if ae.Hint == "" {
						t.Errorf("%s: %s has no hint", what, body)
					}
					if tt.field == "" {
						continue
					}
					var details []api.FieldError
					if b, err := json.Marshal(ae.Details); err == nil {
						_ = json.Unmarshal(b, &details)
					}
					if ae.Code != api.CodeValidation || !strings.HasPrefix(ae.Message, tt.field+" ") ||
						len(details) != 1 || !slices.Equal(details[0].Loc, []string{"body", tt.field}) {
						t.Errorf("%s: %s, want a validation_error naming %s", what, body, tt.field)
					}
				}
			}

			// A query parameter or a header: refused up front, alike on
			// both stores, naming it.
			for _, tt := range []struct {
				method, path string
				header       []string
				loc          []string
			}{
				{"GET", "/v1/admin/audit-log?account_id=%00", nil, []string{"query", "account_id"}},
				{"GET", "/v1/admin/audit-log?account_id=%FF", nil, []string{"query", "account_id"}},
				{"GET", sbp + "/watch", []string{"Last-Event-ID", "\xff"}, []string{"header", "Last-Event-Id"}},
				{"GET", sbp + "/watch?last_event_id=%00", nil, []string{"query", "last_event_id"}},
				{"GET", "/v1/sandboxes?%FF=1", nil, []string{"query"}},
				{"POST", "/v1/sandboxes", []string{"Idempotency-Key", "k\xe9"}, []string{"header", "Idempotency-Key"}},
			} {
				what := tt.method + " " + tt.path + " " + strings.Join(tt.header, ": ")
				resp, body := e.do(tt.method, tt.path, e.KeyA, "", tt.header...)
				if resp.StatusCode != http.StatusUnprocessableEntity {
					t.Errorf("%s: %d %s, want 422", what, resp.StatusCode, body)
					continue
				}
				ae := apiError(t, body)
				var details []api.FieldError
				if b, err := json.Marshal(ae.Details); err == nil {
					_ = json.Unmarshal(b, &details)
				}
				if ae.Code != api.CodeValidation || ae.Hint == "" || !strings.Contains(ae.Message, "holds a NUL character or bytes that are not UTF-8") ||
					len(details) != 1 || !slices.Equal(details[0].Loc, tt.loc) {
					t.Errorf("%s: %s, want a validation_error with a hint naming %v", what, body, tt.loc)
				}
			}

			// OAuth's protocol endpoints answer it in OAuth's shape (RFC 6749 §5.2).
			for _, tt := range []struct {
				path, body string
				want       string // in error_description
			}{
				{"/oauth/token", "grant_type=refresh_token&refresh_token=x&client_id=%00", "form parameter client_id holds a NUL"},
				{"/oauth/token?client_id=%FF", "grant_type=refresh_token&refresh_token=x", "query parameter client_id holds a NUL"},
				{"/oauth/revoke", "token=%FF", "form parameter token holds a NUL"},
			} {
				resp, body := e.do("POST", tt.path, "", tt.body, form...)
				var oe struct {
					Error       string `json:"error"`
					Description string `json:"error_description"`
				}
				if err := json.Unmarshal(body, &oe); resp.StatusCode != http.StatusBadRequest || err != nil ||
					oe.Error != "invalid_request" || !strings.Contains(oe.Description, tt.want) {
					t.Errorf("POST %s %s: %d %s, want 400 invalid_request saying %q", tt.path, tt.body, resp.StatusCode, body, tt.want)
				}
			}

			// OAuth's own shape (RFC 7591).
			resp, body = e.do("POST", "/oauth/register", "", `{"client_name":"a\u0000b","redirect_uris":["http://127.0.0.1/cb"]}`)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid_client_metadata"`) || !strings.Contains(string(body), "client_name contains a NUL character") {
				t.Errorf("OAuth registration with a NUL in client_name: %d %s, want 400 invalid_client_metadata naming client_name", resp.StatusCode, body)
			}

			hdr := http.Header{"X-API-Key": {e.KeyA}}
			for _, tt := range []struct {
				method, path, body string
				status             int
				want               string // in the message
			}{
				{"POST", "/sandboxes", `{"templateID":"base","metadata":{"k":"a\u0000b"}}`, 400, "metadata.k contains a NUL character"},
				{"POST", "/sandboxes", `{"templateID":"base","metadata":{"a\u0000b":"v"}}`, 400, "metadata has a key that contains a NUL character"},
				{"POST", "/sandboxes", `{"templateID":"base","envVars":{"K":"a\u0000b"}}`, 400, "envVars.K contains a NUL character"},
				{"POST", "/sandboxes", `{"templateID":"a\u0000b"}`, 400, "templateID contains a NUL character"},
				{"POST", "/sandboxes/" + sb.ID + "/snapshots", `{"name":"a\u0000b"}`, 400, "name contains a NUL character"},
				{"GET", "/sandboxes/%FF", "", 404, "not UTF-8"},
				{"GET", "/v2/sandboxes?metadata=%FF", "", 400, "query parameter metadata holds a NUL character or bytes that are not UTF-8"},
			} {
				status, body := e2bsdk.Do(t, e.URL, tt.method, tt.path, hdr, tt.body)
				var eb struct {
					Code    int
					Message string
				}
				if err := json.Unmarshal(body, &eb); status != tt.status || err != nil || eb.Code != tt.status || !strings.Contains(eb.Message, tt.want) {
					t.Errorf("E2B %s %s %s: %d %s, want %d saying %q", tt.method, tt.path, tt.body, status, body, tt.status, tt.want)
				}
			}
		})
	}
}

// bothStores opens a new store of each kind by its name: SQLite, and
// PostgreSQL on the server of servertest.PostgresEnv (skipped without it
// outside CI, where .ci/run starts one).
func bothStores() map[string]func(t *testing.T) model.Store {
	return map[string]func(t *testing.T) model.Store{
		"sqlite": func(t *testing.T) model.Store { return openStore(t, t.TempDir()) },
		"postgres": func(t *testing.T) model.Store {
			dsn := servertest.PostgresDSN(t)
			if dsn == "" {
				t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
			}
			return openReplicaStore(t, dsn)
		},
	}
}
