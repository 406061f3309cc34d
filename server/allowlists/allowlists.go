package allowlists

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/allowlist"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// CheckCommand enforces the caller's account allowlist on command.
func (s *Service) CheckCommand(r *http.Request, command string) error {
	al, err := s.accountAllowlist(r)
	if err != nil || al == nil {
		return err
	}
	return al.Check(command)
}

// accountAllowlist returns the caller's compiled allowlist, nil when the
// account has none.
func (s *Service) accountAllowlist(r *http.Request) (*allowlist.Rules, error) {
	rules, err := s.d.Store.AllowedCommands(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return nil, fmt.Errorf("read allowlist: %w", err)
	}
	if len(rules) == 0 {
		return nil, nil
	}
	return s.d.Cache.Get(rules)
}

// CheckBodyCommand enforces the allowlist on the "command" of a JSON body
// the sidecar will validate, or, for the Python interpreter (code), on
// "code" as the arguments of python3 -c: an allowlist that does not let
// python3 run arbitrary code must not be sidestepped through the
// interpreter (the reference let it be); the Node.js interpreter's code
// likewise as node -e.
func (s *Service) CheckBodyCommand(r *http.Request, body []byte, code bool, program string) error {
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

// get serves GET /v1/account/allowed-commands.
func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	rules, err := s.d.Store.AllowedCommands(r.Context(), authz.Account(r.Context()).ID)
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

// put serves PUT /v1/account/allowed-commands.
func (s *Service) put(w http.ResponseWriter, r *http.Request) error {
	if authz.From(r.Context()).Key.Role != model.RoleAdmin {
		return errAdminOnly
	}
	body, err := apihttp.ReadJSON(w, r, httpx.MaxSmallBody)
	if err != nil {
		return err
	}
	var req api.AllowedCommands
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return allowlist.RulesError(api.CodeInvalidRules, fmt.Sprintf("request body is not an allowlist: %v", err),
			`send {"rules": ["ls", {"command": "curl", "args_allow": ["^https://"], "args_deny": ["--upload-file"]}]}`)
	}
	if len(req.Rules) == 0 {
		if err := unknownFields(body); err != nil {
			return err
		}
	}
	if _, err := allowlist.Compile(req.Rules); err != nil {
		return err
	}
	if err := s.d.Store.SetAllowedCommands(r.Context(), authz.Account(r.Context()).ID, req.Rules, s.d.Now()); err != nil {
		return fmt.Errorf("store allowlist: %w", err)
	}
	httpx.WriteJSON(w, http.StatusOK, req)
	return nil
}

// delete serves DELETE /v1/account/allowed-commands: back
// to allowing everything.
func (s *Service) delete(w http.ResponseWriter, r *http.Request) error {
	if authz.From(r.Context()).Key.Role != model.RoleAdmin {
		return errAdminOnly
	}
	if err := s.d.Store.SetAllowedCommands(r.Context(), authz.Account(r.Context()).ID, nil, s.d.Now()); err != nil {
		return fmt.Errorf("clear allowlist: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// unknownFields refuses a PUT body without rules that has other keys,
// naming them: {"allowed_commands": [...]} (a guess after the route's
// name, or a typo) would otherwise be refused as needing at least one rule, with
// nothing to say the key was wrong. Unknown keys beside rules are ignored,
// as every route ignores them.
func unknownFields(body []byte) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil // not an object: Compile's refusal says what to send
	}
	var names []string
	for k := range fields {
		if !strings.EqualFold(k, "rules") { // as encoding/json matches it
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	what := "field"
	if len(names) > 1 {
		what = "fields"
	}
	return allowlist.RulesError(api.CodeInvalidRules,
		fmt.Sprintf("the allowlist needs at least one rule, under rules; unknown %s %s", what, strings.Join(names, ", ")),
		`send {"rules": ["ls", {"command": "curl", "args_allow": ["^https://api\\.example\\.com/"]}]}, or DELETE to allow everything`)
}
