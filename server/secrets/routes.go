package secrets

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// RouteDeps is what the secrets routes need of the control plane.
type RouteDeps struct {
	// LoadSandbox loads the request's {id} sandbox for its caller (an
	// *api.Error for one it may not see).
	LoadSandbox func(*http.Request) (*model.Sandbox, error)
	// ActiveAudited refuses an audited operation on a sandbox that is not
	// active or while the audit log takes no entries.
	ActiveAudited func(*model.Sandbox) error
	// Audit appends an entry to the sandbox's audit log.
	Audit func(context.Context, audit.Record) error
	Now   func() time.Time
}

// Routes lists the secrets broker's routes: the account's secrets, and
// requests made with them on a sandbox's behalf. s may be nil (a server
// without secrets): its routes answer secrets_unavailable.
func (s *Service) Routes(d RouteDeps) []httpx.Route {
	h := &routes{s: s, d: d}
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/secrets", Summary: "Create a secret (admin keys): a write-only value, envelope-encrypted at rest, sent only to its allowed_hosts", Request: api.CreateSecretRequest{}, Response: api.Secret{}, Status: http.StatusCreated}, Cred: httpx.CredAPIKey, Handler: h.createSecret},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/secrets", Summary: "List the account's secrets by name, without values", Response: []api.Secret{}}, Cred: httpx.CredAPIKey, Handler: h.listSecrets},
		{RouteDoc: httpx.RouteDoc{Pattern: "PUT /v1/secrets/{id}", Summary: "Replace a secret's value (and allowed_hosts when given); {id} is the id or the name (admin keys)", Request: api.UpdateSecretRequest{}, Response: api.Secret{}}, Cred: httpx.CredAPIKey, Handler: h.updateSecret},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/secrets/{id}", Summary: "Delete a secret; {id} is the id or the name (admin keys)", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: h.deleteSecret},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/http-request", Summary: "The control plane makes an HTTP request for the sandbox, {{secret:NAME}} replaced by the value of its secret NAME, only to that secret's allowed hosts; echoes of the value are redacted", Request: api.HTTPRequest{}, Response: api.HTTPResponse{}}, Cred: httpx.CredAPIKey, Handler: h.httpRequest},
	}
}

// account serves a /v1/secrets handler for the caller's account; admin
// routes refuse member keys.
func account(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request, string) error, admin bool) error {
	c := authz.From(r.Context())
	if k := c.Key; admin && (k == nil || k.Role != model.RoleAdmin) {
		return errMemberSecrets
	}
	return h(w, r, c.Account.ID)
}

// createSecret serves POST /v1/secrets (admin keys).
func (h *routes) createSecret(w http.ResponseWriter, r *http.Request) error {
	return account(w, r, h.s.ServeCreate, true)
}

// listSecrets serves GET /v1/secrets.
func (h *routes) listSecrets(w http.ResponseWriter, r *http.Request) error {
	return account(w, r, h.s.ServeList, false)
}

// updateSecret serves PUT /v1/secrets/{id} (admin keys).
func (h *routes) updateSecret(w http.ResponseWriter, r *http.Request) error {
	return account(w, r, h.s.ServeUpdate, true)
}

// deleteSecret serves DELETE /v1/secrets/{id} (admin keys).
func (h *routes) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	return account(w, r, h.s.ServeDelete, true)
}

// Secrets are egress towards the hosts they allow, which is the
// operator's to give, as egress_hosts: member keys (what agents hold) use
// secrets but do not write them.
var errMemberSecrets = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeForbidden,
	Message: "member keys cannot create, change or delete secrets",
	Hint:    "use an admin API key",
}

type routes struct {
	s *Service
	d RouteDeps
}

// httpRequest serves POST /v1/sandboxes/{id}/http-request: the control
// plane makes the request, with the sandbox's secrets filled in, and
// audits which secrets it used (never their values).
func (h *routes) httpRequest(w http.ResponseWriter, r *http.Request) error {
	sb, err := h.d.LoadSandbox(r)
	if err != nil {
		return err
	}
	req, err := DecodeHTTPRequest(w, r)
	if err != nil {
		return err
	}
	if err := h.d.ActiveAudited(sb); err != nil {
		return err
	}
	started := h.d.Now()
	resp, use, err := h.s.Do(r.Context(), sb.AccountID, sb.ID, req)
	if use.Host == "" {
		return err // refused before it named a destination: nothing to record
	}
	detail := map[string]any{"method": use.Method, "host": use.Host, "path": use.Path, "secrets": nonNilStrings(use.Secrets)}
	if use.Status != 0 {
		detail["status_code"] = use.Status
	}
	if e, ok := err.(*api.Error); ok {
		detail["error"] = e.Code
	}
	if aerr := h.d.Audit(r.Context(), audit.Record{
		Sandbox: sb, Operation: "http_request", Detail: detail, Started: started, Duration: h.d.Now().Sub(started),
	}); aerr != nil {
		return aerr
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
	return nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
