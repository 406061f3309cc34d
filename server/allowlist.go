package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/allowlist"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// checkCommand enforces the caller's account allowlist on command.
func (s *Server) checkCommand(r *http.Request, command string) error {
	al, err := s.accountAllowlist(r)
	if err != nil || al == nil {
		return err
	}
	return al.Check(command)
}

// accountAllowlist returns the caller's compiled allowlist, nil when the
// account has none.
func (s *Server) accountAllowlist(r *http.Request) (*allowlist.Rules, error) {
	rules, err := s.store.AllowedCommands(r.Context(), accountFrom(r.Context()).ID)
	if err != nil {
		return nil, fmt.Errorf("read allowlist: %w", err)
	}
	if len(rules) == 0 {
		return nil, nil
	}
	return s.allowlists.Get(rules)
}

// readBody reads a JSON request body of at most limit bytes, checked
// but passed on unchanged (apihttp.ReadJSON).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	return apihttp.ReadJSON(w, r, limit)
}

// checkBodyCommand enforces the allowlist on the "command" of a JSON body
// the sidecar will validate, or, for the Python interpreter (code), on
// "code" as the arguments of python3 -c: an allowlist that does not let
// python3 run arbitrary code must not be sidestepped through the
// interpreter (the reference let it be); the Node.js interpreter's code
// likewise as node -e.
func (s *Server) checkBodyCommand(r *http.Request, body []byte, code bool, program string) error {
	var req struct {
		Command string `json:"command"`
		Code    string `json:"code"`
	}
	// A type error elsewhere in the body still leaves these decoded; the
	// sidecar will refuse such a body, but check what it names anyway.
	_ = json.Unmarshal(body, &req)
	al, err := s.accountAllowlist(r)
	if err != nil || al == nil {
		return err
	}
	if code && program == "node" {
		return al.CheckProgram("node", []string{"-e", req.Code}, false)
	}
	if code {
		return al.CheckProgram("python3", []string{"-c", req.Code}, false)
	}
	if req.Command == "" {
		return nil
	}
	return al.Check(req.Command)
}

// getAllowedCommands serves GET /v1/account/allowed-commands.
func (s *Server) getAllowedCommands(w http.ResponseWriter, r *http.Request) error {
	rules, err := s.store.AllowedCommands(r.Context(), accountFrom(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("read allowlist: %w", err)
	}
	if rules == nil {
		rules = []api.CommandRule{}
	}
	httpx.WriteJSON(w, http.StatusOK, api.AllowedCommands{Rules: rules})
	return nil
}

// errAdminOnly refuses member keys the allowlist's changes: the list
// restrains agents, which hold member keys, so they must not lift it.
var errAdminOnly = api.Errorf(http.StatusForbidden, api.CodeForbidden, "only admin keys may change the command allowlist").
	WithHint("use an admin API key")

// putAllowedCommands serves PUT /v1/account/allowed-commands.
func (s *Server) putAllowedCommands(w http.ResponseWriter, r *http.Request) error {
	if authz.From(r.Context()).Key.Role != model.RoleAdmin {
		return errAdminOnly
	}
	body, err := readBody(w, r, httpx.MaxSmallBody)
	if err != nil {
		return err
	}
	var req api.AllowedCommands
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return allowlist.RulesError(api.CodeInvalidRules, fmt.Sprintf("request body is not an allowlist: %v", err),
			`send {"rules": ["ls", {"command": "curl", "args_allow": ["^https://"], "args_deny": ["--upload-file"]}]}`)
	}
	if _, err := allowlist.Compile(req.Rules); err != nil {
		return err
	}
	if err := s.store.SetAllowedCommands(r.Context(), accountFrom(r.Context()).ID, req.Rules, s.now()); err != nil {
		return fmt.Errorf("store allowlist: %w", err)
	}
	httpx.WriteJSON(w, http.StatusOK, req)
	return nil
}

// deleteAllowedCommands serves DELETE /v1/account/allowed-commands: back
// to allowing everything.
func (s *Server) deleteAllowedCommands(w http.ResponseWriter, r *http.Request) error {
	if authz.From(r.Context()).Key.Role != model.RoleAdmin {
		return errAdminOnly
	}
	if err := s.store.SetAllowedCommands(r.Context(), accountFrom(r.Context()).ID, nil, s.now()); err != nil {
		return fmt.Errorf("clear allowlist: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
