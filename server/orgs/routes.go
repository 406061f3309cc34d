package orgs

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the organizations routes. Reading takes any API key;
// changing an organization, its members or invites, accepting an invite
// and issuing oneself a key of an organization take an access token or
// an admin key, as managing API keys does. Each handler then checks the
// person's role in the organization (access).
func (s *Service) Routes() []httpx.Route {
	const org = "/v1/organizations/{org_id}"
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/organizations", Summary: "Create an organization; the caller is its owner", Request: api.CreateOrganizationRequest{}, Response: api.Organization{}, Status: http.StatusCreated}, Cred: httpx.CredTokenOrAdmin, Handler: s.create},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/organizations", Summary: "List the organizations the caller is a member of, with its role", Response: []api.Organization{}}, Cred: httpx.CredAPIKey, Handler: s.list},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/organizations/accept-invite", Summary: "Accept an invite with its token, as the invited email", Request: api.AcceptInviteRequest{}, Response: api.Organization{}}, Cred: httpx.CredTokenOrAdmin, Handler: s.accept},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET " + org, Summary: "Get an organization (members)", Response: api.Organization{}}, Cred: httpx.CredAPIKey, Handler: s.get},
		{RouteDoc: httpx.RouteDoc{Pattern: "PATCH " + org, Summary: "Rename an organization or set its quota (owners and admins)", Request: api.UpdateOrganizationRequest{}, Response: api.Organization{}}, Cred: httpx.CredTokenOrAdmin, Handler: s.update},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET " + org + "/members", Summary: "List an organization's members (members)", Response: []api.OrganizationMember{}}, Cred: httpx.CredAPIKey, Handler: s.members},
		{RouteDoc: httpx.RouteDoc{Pattern: "PATCH " + org + "/members/{account_id}", Summary: "Change a member's role (owners and admins; owners for the owner role)", Request: api.UpdateMemberRequest{}, Response: api.OrganizationMember{}}, Cred: httpx.CredTokenOrAdmin, Handler: s.setRole},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE " + org + "/members/{account_id}", Summary: "Remove a member, or leave; their keys of the organization stop at once", Status: http.StatusNoContent}, Cred: httpx.CredTokenOrAdmin, Handler: s.remove},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST " + org + "/invites", Summary: "Invite an email; the answer carries the single-use token, shown once", Request: api.CreateInviteRequest{}, Response: api.OrganizationInvite{}, Status: http.StatusCreated}, Cred: httpx.CredTokenOrAdmin, Handler: s.invite},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET " + org + "/invites", Summary: "List the invites not yet accepted (owners and admins)", Response: []api.OrganizationInvite{}}, Cred: httpx.CredTokenOrAdmin, Handler: s.invites},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE " + org + "/invites/{invite_id}", Summary: "Revoke an invite (owners and admins)", Status: http.StatusNoContent}, Cred: httpx.CredTokenOrAdmin, Handler: s.revokeInvite},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST " + org + "/api-keys", Summary: "Issue yourself an API key of the organization (shown once); its role is at most your role there", Request: api.CreateAPIKeyRequest{}, Response: api.APIKeyCreated{}, Status: http.StatusCreated}, Cred: httpx.CredTokenOrAdmin, Handler: s.createKey},
	}
}
