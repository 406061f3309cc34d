package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/boxkite/boxkite/client/api"
)

func orgPath(id string, rest ...string) string {
	p := "/v1/organizations/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// CreateOrganization calls POST /v1/organizations; the caller becomes its owner.
func (c *Client) CreateOrganization(ctx context.Context, name string) (*api.Organization, error) {
	var o api.Organization
	if err := c.do(ctx, http.MethodPost, "/v1/organizations", api.CreateOrganizationRequest{Name: name}, &o, nil); err != nil {
		return nil, err
	}
	return &o, nil
}

// ListOrganizations calls GET /v1/organizations: the caller's, with its role.
func (c *Client) ListOrganizations(ctx context.Context) ([]api.Organization, error) {
	var os []api.Organization
	if err := c.do(ctx, http.MethodGet, "/v1/organizations", nil, &os, nil); err != nil {
		return nil, err
	}
	return os, nil
}

// GetOrganization calls GET /v1/organizations/{org_id}.
func (c *Client) GetOrganization(ctx context.Context, id string) (*api.Organization, error) {
	var o api.Organization
	if err := c.do(ctx, http.MethodGet, orgPath(id), nil, &o, nil); err != nil {
		return nil, err
	}
	return &o, nil
}

// UpdateOrganization calls PATCH /v1/organizations/{org_id}.
func (c *Client) UpdateOrganization(ctx context.Context, id string, req api.UpdateOrganizationRequest) (*api.Organization, error) {
	var o api.Organization
	if err := c.do(ctx, http.MethodPatch, orgPath(id), req, &o, nil); err != nil {
		return nil, err
	}
	return &o, nil
}

// OrganizationMembers calls GET /v1/organizations/{org_id}/members.
func (c *Client) OrganizationMembers(ctx context.Context, id string) ([]api.OrganizationMember, error) {
	var ms []api.OrganizationMember
	if err := c.do(ctx, http.MethodGet, orgPath(id, "members"), nil, &ms, nil); err != nil {
		return nil, err
	}
	return ms, nil
}

// SetMemberRole calls PATCH /v1/organizations/{org_id}/members/{account_id}.
func (c *Client) SetMemberRole(ctx context.Context, id, accountID, role string) (*api.OrganizationMember, error) {
	var m api.OrganizationMember
	if err := c.do(ctx, http.MethodPatch, orgPath(id, "members", accountID), api.UpdateMemberRequest{Role: role}, &m, nil); err != nil {
		return nil, err
	}
	return &m, nil
}

// RemoveMember calls DELETE /v1/organizations/{org_id}/members/{account_id};
// with the caller's own account id it leaves the organization.
func (c *Client) RemoveMember(ctx context.Context, id, accountID string) error {
	return c.do(ctx, http.MethodDelete, orgPath(id, "members", accountID), nil, nil, nil)
}

// InviteMember calls POST /v1/organizations/{org_id}/invites; the
// answer's Token is shown only here.
func (c *Client) InviteMember(ctx context.Context, id string, req api.CreateInviteRequest) (*api.OrganizationInvite, error) {
	var inv api.OrganizationInvite
	if err := c.do(ctx, http.MethodPost, orgPath(id, "invites"), req, &inv, nil); err != nil {
		return nil, err
	}
	return &inv, nil
}

// OrganizationInvites calls GET /v1/organizations/{org_id}/invites.
func (c *Client) OrganizationInvites(ctx context.Context, id string) ([]api.OrganizationInvite, error) {
	var invs []api.OrganizationInvite
	if err := c.do(ctx, http.MethodGet, orgPath(id, "invites"), nil, &invs, nil); err != nil {
		return nil, err
	}
	return invs, nil
}

// RevokeInvite calls DELETE /v1/organizations/{org_id}/invites/{invite_id}.
func (c *Client) RevokeInvite(ctx context.Context, id, inviteID string) error {
	return c.do(ctx, http.MethodDelete, orgPath(id, "invites", inviteID), nil, nil, nil)
}

// AcceptInvite calls POST /v1/organizations/accept-invite.
func (c *Client) AcceptInvite(ctx context.Context, token string) (*api.Organization, error) {
	var o api.Organization
	if err := c.do(ctx, http.MethodPost, "/v1/organizations/accept-invite", api.AcceptInviteRequest{Token: token}, &o, nil); err != nil {
		return nil, err
	}
	return &o, nil
}

// CreateOrganizationKey calls POST /v1/organizations/{org_id}/api-keys:
// a key of the organization held by the caller (shown only here).
func (c *Client) CreateOrganizationKey(ctx context.Context, id string, req api.CreateAPIKeyRequest) (*api.APIKeyCreated, error) {
	var k api.APIKeyCreated
	if err := c.do(ctx, http.MethodPost, orgPath(id, "api-keys"), req, &k, nil); err != nil {
		return nil, err
	}
	return &k, nil
}
