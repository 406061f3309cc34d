package api

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Limits of an account's command allowlist (reference §3.6).
const (
	MaxAllowlistRules   = 50  // rules in one allowlist
	MaxAllowlistPattern = 200 // characters in one args_allow or args_deny pattern
)

// Error codes of the command allowlist. Refusing a command is 403; every
// validation failure of a PUT is 400, as in the reference.
const (
	CodeCommandNotAllowed = "command_not_allowed" // 403: exec or process start refused by the allowlist
	CodeTooManyRules      = "too_many_rules"      // 400: more than MaxAllowlistRules rules
	CodePatternTooLong    = "pattern_too_long"    // 400: a pattern longer than MaxAllowlistPattern
	CodeInvalidPattern    = "invalid_pattern"     // 400: a pattern that does not compile (RE2 syntax)
	CodeInvalidRules      = "invalid_rules"       // 400: no usable rule, or a rule of the wrong shape
)

// CommandRule is one entry of an allowlist. Command is a program name
// without a slash ("ls", found through the sandbox's PATH) or a clean
// absolute path ("/usr/bin/ls", which allows exactly that path). On the
// wire a rule is either a bare string, the program ("ls": any arguments), or an object
// {"command": "curl", "args_allow": [...], "args_deny": [...]} whose
// patterns (RE2, matched case-insensitively anywhere in the arguments
// joined by spaces) narrow what the program may be given: at least one
// args_allow pattern must match when there are any, and no args_deny
// pattern may match.
type CommandRule struct {
	Command   string   `json:"command"`
	ArgsAllow []string `json:"args_allow,omitempty"`
	ArgsDeny  []string `json:"args_deny,omitempty"`
}

// MarshalJSON writes a rule without patterns as the bare program name, the
// reference's short form.
func (r CommandRule) MarshalJSON() ([]byte, error) {
	if len(r.ArgsAllow) == 0 && len(r.ArgsDeny) == 0 {
		return json.Marshal(r.Command)
	}
	type plain CommandRule
	return json.Marshal(plain(r))
}

// UnmarshalJSON accepts both forms.
func (r *CommandRule) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		*r = CommandRule{}
		return json.Unmarshal(data, &r.Command)
	}
	if len(data) == 0 || data[0] != '{' {
		return errors.New(`a command rule is a program name or {"command": …, "args_allow": […], "args_deny": […]}`)
	}
	type plain CommandRule
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*r = CommandRule(p)
	return nil
}

// AllowedCommands is the body of GET and PUT /v1/account/allowed-commands.
// No rules means every command is allowed.
type AllowedCommands struct {
	Rules []CommandRule `json:"rules"`
}
