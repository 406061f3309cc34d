package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/boxkite/boxkite/client/api"
)

// Accounts and credentials. Signup and Login need no API key and return
// an access token; the key-management calls (CreateAPIKey, APIKeys,
// RevokeAPIKey) take that token in place of the API key, or an admin key:
//
//	tok, err := client.New(url, "").Login(ctx, email, password)
//	key, err := client.New(url, tok.AccessToken).CreateAPIKey(ctx, api.CreateAPIKeyRequest{Name: "ci"})

// Signup calls POST /v1/auth/signup: it creates an account and returns an
// access token for it.
func (c *Client) Signup(ctx context.Context, email, password string) (*api.TokenResponse, error) {
	var out api.TokenResponse
	if err := c.do(ctx, http.MethodPost, "/v1/auth/signup", api.Credentials{Email: email, Password: password}, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// Login calls POST /v1/auth/login and returns an access token.
func (c *Client) Login(ctx context.Context, email, password string) (*api.TokenResponse, error) {
	var out api.TokenResponse
	if err := c.do(ctx, http.MethodPost, "/v1/auth/login", api.Credentials{Email: email, Password: password}, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateAPIKey calls POST /v1/api-keys. The answer's Key is the only copy
// of the secret.
func (c *Client) CreateAPIKey(ctx context.Context, req api.CreateAPIKeyRequest) (*api.APIKeyCreated, error) {
	var out api.APIKeyCreated
	if err := c.do(ctx, http.MethodPost, "/v1/api-keys", req, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// APIKeys calls GET /v1/api-keys: the account's keys, revoked ones too.
func (c *Client) APIKeys(ctx context.Context) ([]api.APIKey, error) {
	var out []api.APIKey
	if err := c.do(ctx, http.MethodGet, "/v1/api-keys", nil, &out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// RevokeAPIKey calls DELETE /v1/api-keys/{id}; the key stops working at once.
func (c *Client) RevokeAPIKey(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/api-keys/"+url.PathEscape(id), nil, nil, nil)
}

// Account calls GET /v1/account: the account and the key in use.
func (c *Client) Account(ctx context.Context) (*api.Account, error) {
	var out api.Account
	if err := c.do(ctx, http.MethodGet, "/v1/account", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// AccountMe calls GET /v1/account/me: the account of the client's access
// token (set APIKey to the access_token of Signup or Login).
func (c *Client) AccountMe(ctx context.Context) (*api.Account, error) {
	var out api.Account
	if err := c.do(ctx, http.MethodGet, "/v1/account/me", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateAccount calls PATCH /v1/account: it changes the settings req
// names and returns the account.
func (c *Client) UpdateAccount(ctx context.Context, req api.AccountUpdate) (*api.Account, error) {
	var out api.Account
	if err := c.do(ctx, http.MethodPatch, "/v1/account", req, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// Usage calls GET /v1/usage: this month's sandbox-hours and the running
// sandboxes, with their limits.
func (c *Client) Usage(ctx context.Context) (*api.Usage, error) {
	var out api.Usage
	if err := c.do(ctx, http.MethodGet, "/v1/usage", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// SSHKeys calls GET /v1/account/ssh-keys.
func (c *Client) SSHKeys(ctx context.Context) ([]api.SSHKey, error) {
	var out []api.SSHKey
	if err := c.do(ctx, http.MethodGet, "/v1/account/ssh-keys", nil, &out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// AddSSHKey calls POST /v1/account/ssh-keys.
func (c *Client) AddSSHKey(ctx context.Context, req api.AddSSHKeyRequest) (*api.SSHKey, error) {
	var out api.SSHKey
	if err := c.do(ctx, http.MethodPost, "/v1/account/ssh-keys", req, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveSSHKey calls DELETE /v1/account/ssh-keys/{id}.
func (c *Client) RemoveSSHKey(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/account/ssh-keys/"+url.PathEscape(id), nil, nil, nil)
}
