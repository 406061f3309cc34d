package client

import (
	"context"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// AllowedCommands returns the account's command allowlist; no rules means
// every command is allowed.
func (c *Client) AllowedCommands(ctx context.Context) ([]api.CommandRule, error) {
	var res api.AllowedCommands
	if err := c.do(ctx, http.MethodGet, "/v1/account/allowed-commands", nil, &res, nil); err != nil {
		return nil, err
	}
	return res.Rules, nil
}

// SetAllowedCommands replaces the account's command allowlist (admin keys
// only) and returns it as stored. The server refuses lists it cannot use
// (api.CodeTooManyRules, api.CodePatternTooLong, api.CodeInvalidPattern,
// api.CodeInvalidRules).
func (c *Client) SetAllowedCommands(ctx context.Context, rules []api.CommandRule) ([]api.CommandRule, error) {
	var res api.AllowedCommands
	if err := c.do(ctx, http.MethodPut, "/v1/account/allowed-commands", api.AllowedCommands{Rules: rules}, &res, nil); err != nil {
		return nil, err
	}
	return res.Rules, nil
}

// ClearAllowedCommands removes the account's command allowlist (admin
// keys only), so every command is allowed again.
func (c *Client) ClearAllowedCommands(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/v1/account/allowed-commands", nil, nil, nil)
}
