package api

import "time"

// Organization roles: an owner may do everything, including making
// owners; an admin manages members, invites and the organization's keys;
// a member uses the organization's sandboxes and reads its audit log.
const (
	OrgRoleOwner  = "owner"
	OrgRoleAdmin  = "admin"
	OrgRoleMember = "member"
)

// Organization error codes.
const (
	// CodeAlreadyMember (409): the account is a member already.
	CodeAlreadyMember = "already_member"
	// CodeLastOwner (409): the change would leave the organization without
	// an owner; make another member owner first.
	CodeLastOwner = "last_owner"
	// CodeInviteUsed (409): the invite was accepted or revoked already.
	CodeInviteUsed = "invite_used"
	// CodeInviteExpired (410): the invite is older than its 7 days.
	CodeInviteExpired = "invite_expired"
	// CodeEmailMismatch (403): the invite is for another account's email.
	CodeEmailMismatch = "email_mismatch"
)

// MaxOrgNameLen bounds an organization's name, in characters (runes),
// after trimming; control characters are refused.
const MaxOrgNameLen = 100

// InviteTTL is how long an invite may be accepted.
const InviteTTL = 7 * 24 * time.Hour

// CreateOrganizationRequest is the body of POST /v1/organizations.
type CreateOrganizationRequest struct {
	Name string `json:"name"` // 1..100 printable characters
}

// OrganizationQuota are an organization's own limits on its sandboxes,
// at most the server's per-account limits; 0 means the server's limit.
type OrganizationQuota struct {
	MaxConcurrentSandboxes int     `json:"max_concurrent_sandboxes"`
	MonthlySandboxHours    float64 `json:"monthly_sandbox_hours"`
}

// Organization is an organization as one of its members sees it.
type Organization struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	CreatedAt time.Time         `json:"created_at"`
	Role      string            `json:"role"` // the caller's role in it
	Quota     OrganizationQuota `json:"quota"`
}

// UpdateOrganizationRequest is the body of PATCH /v1/organizations/{org_id}:
// what to change; absent fields stay.
type UpdateOrganizationRequest struct {
	Name  *string            `json:"name,omitempty"`
	Quota *OrganizationQuota `json:"quota,omitempty"`
}

// OrganizationMember is one member of an organization.
type OrganizationMember struct {
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	JoinedAt  time.Time `json:"joined_at"`
}

// UpdateMemberRequest is the body of PATCH
// /v1/organizations/{org_id}/members/{account_id}.
type UpdateMemberRequest struct {
	Role string `json:"role"` // owner, admin or member
}

// CreateInviteRequest is the body of POST /v1/organizations/{org_id}/invites.
type CreateInviteRequest struct {
	Email string `json:"email"`          // the invitee's account email
	Role  string `json:"role,omitempty"` // member (default), admin or owner
}

// OrganizationInvite is an invite. Token is only in the answer to the
// create: the inviter hands it to the invitee (there is no mail), who
// accepts it while logged in as the invited email, once, within 7 days.
type OrganizationInvite struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Role       string     `json:"role"`
	InvitedBy  string     `json:"invited_by"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
	Token      string     `json:"token,omitempty"`
}

// AcceptInviteRequest is the body of POST /v1/organizations/accept-invite.
type AcceptInviteRequest struct {
	Token string `json:"token"`
}
