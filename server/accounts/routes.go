package accounts

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the accounts routes. Key management takes an access
// token, or an admin API key (local mode has no password); a registered
// SSH key opens terminals through the bastion, so only whoever may take
// over (an admin key, the account's login) adds or removes one.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/auth/signup", Summary: "Create an account; answers with an access token", Request: api.Credentials{}, Response: api.TokenResponse{}, Status: http.StatusCreated}, Cred: httpx.CredNone, Handler: s.signup},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/auth/login", Summary: "Log in; answers with an access token", Request: api.Credentials{}, Response: api.TokenResponse{}}, Cred: httpx.CredNone, Handler: s.login},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/api-keys", Summary: "Create an API key (shown once)", Request: api.CreateAPIKeyRequest{}, Response: api.APIKeyCreated{}, Status: http.StatusCreated}, Cred: httpx.CredTokenOrAdmin, Handler: s.createAPIKey},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/api-keys", Summary: "List the account's API keys", Response: []api.APIKey{}}, Cred: httpx.CredTokenOrAdmin, Handler: s.listAPIKeys},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/api-keys/{key_id}", Summary: "Revoke an API key, at once", Status: http.StatusNoContent}, Cred: httpx.CredTokenOrAdmin, Handler: s.revokeAPIKey},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/account/me", Summary: "The account of an access token", Response: api.Account{}}, Cred: httpx.CredToken, Handler: s.getAccountMe},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/account", Summary: "The account of the API key", Response: api.Account{}}, Cred: httpx.CredAPIKey, Handler: s.getAccount},
		{RouteDoc: httpx.RouteDoc{Pattern: "PATCH /v1/account", Summary: "Change the account's settings: scrub_output", Request: api.AccountUpdate{}, Response: api.Account{}}, Cred: httpx.CredTokenOrAdmin, Handler: s.updateAccount},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/account/ssh-keys", Summary: "List the SSH keys registered for the bastion", Response: []api.SSHKey{}}, Cred: httpx.CredAPIKey, Handler: s.listSSHKeys},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/account/ssh-keys", Summary: "Register an SSH public key for the bastion", Request: api.AddSSHKeyRequest{}, Response: api.SSHKey{}, Status: http.StatusCreated}, Cred: httpx.CredTokenOrAdmin, Handler: s.addSSHKey},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/account/ssh-keys/{key_id}", Summary: "Remove an SSH key", Status: http.StatusNoContent}, Cred: httpx.CredTokenOrAdmin, Handler: s.removeSSHKey},
	}
}
