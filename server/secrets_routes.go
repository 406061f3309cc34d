package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
)

// secretRoutes serves the secrets broker (server/secrets): the account's
// secrets, and requests made with them on a sandbox's behalf.
func (s *Server) secretRoutes() {
	sv := s.cfg.Secrets
	acct := func(h func(http.ResponseWriter, *http.Request, string) error, admin bool) func(http.ResponseWriter, *http.Request) error {
		return func(w http.ResponseWriter, r *http.Request) error {
			if k := authz.From(r.Context()).Key; admin && (k == nil || k.Role != model.RoleAdmin) {
				return errMemberSecrets
			}
			return h(w, r, accountFrom(r.Context()).ID)
		}
	}
	s.handle("POST /v1/secrets", acct(sv.ServeCreate, true))
	s.handle("GET /v1/secrets", acct(sv.ServeList, false))
	s.handle("PUT /v1/secrets/{id}", acct(sv.ServeUpdate, true))
	s.handle("DELETE /v1/secrets/{id}", acct(sv.ServeDelete, true))
	s.handle("POST /v1/sandboxes/{id}/http-request", s.httpRequest)
}

// Secrets are egress towards the hosts they allow, which is the
// operator's to give, as egress_hosts: member keys (what agents hold) use
// secrets but do not write them.
var errMemberSecrets = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeForbidden,
	Message: "member keys cannot create, change or delete secrets",
	Hint:    "use an admin API key",
}

// httpRequest serves POST /v1/sandboxes/{id}/http-request: the control
// plane makes the request, with the sandbox's secrets filled in, and
// audits which secrets it used (never their values).
func (s *Server) httpRequest(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.loadSandbox(r)
	if err != nil {
		return err
	}
	req, err := secrets.DecodeHTTPRequest(w, r)
	if err != nil {
		return err
	}
	if err := s.activeAudited(sb); err != nil {
		return err
	}
	started := s.now()
	resp, use, err := s.cfg.Secrets.Do(r.Context(), sb.AccountID, sb.ID, req)
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
	if aerr := s.audit(r.Context(), audit.Record{
		Sandbox: sb, Operation: "http_request", Detail: detail, Started: started, Duration: s.now().Sub(started),
	}); aerr != nil {
		return aerr
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
	return nil
}

// secretEnv resolves an exec's secret_env into its env, when the server
// allows that weaker mode, and returns what wraps the JSON result so the
// values' echoes are redacted (nil for none). A stream is refused: its
// output could carry a value split across events.
func (s *Server) secretEnv(r *http.Request, sb *model.Sandbox, req *api.ExecRequest) (func(http.ResponseWriter) (http.ResponseWriter, func()), error) {
	if len(req.SecretEnv) == 0 {
		return nil, nil
	}
	if !s.cfg.SecretEnv {
		return nil, httpx.NotSupported("secret_env", "the server keeps secrets out of sandboxes: use http_request, or start boxkite-server with --allow-secret-env (docs/secrets.md)")
	}
	if strings.Contains(r.Header.Get("Accept"), api.ContentTypeNDJSON) {
		return nil, httpx.Invalid("secret_env", "secret_env works with the JSON result, not a stream", "drop Accept: application/x-ndjson")
	}
	vars, values, err := s.cfg.Secrets.EnvValues(r.Context(), sb.AccountID, sb.ID, req.SecretEnv)
	if err != nil {
		return nil, err
	}
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	for k, v := range vars {
		if _, dup := req.Env[k]; dup {
			return nil, httpx.Invalid("secret_env", fmt.Sprintf("%s is in both env and secret_env", k), "")
		}
		req.Env[k] = v
	}
	red := secrets.NewRedactor(values)
	return func(w http.ResponseWriter) (http.ResponseWriter, func()) {
		j := scrub.NewJSONRewriter(w, func(b []byte) []byte { return []byte(red.Apply(string(b))) })
		return j, j.Finish
	}, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
