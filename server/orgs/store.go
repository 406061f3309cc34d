package orgs

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Org is a stored organization.
type Org struct {
	ID        string
	Name      string
	CreatedAt time.Time
	Quota     api.OrganizationQuota
}

// Demotion is what a member's demotion to member ended: their admin keys
// of the organization, lowered to member keys, and the SSH keys they had
// registered in it, deleted.
type Demotion struct {
	Keys    []DemotedKey
	SSHKeys []string // ids
}

// DemotedKey is an admin key of an organization its holder's demotion
// lowered to a member key, with its count of demotions now
// (model.APIKey.Demotions).
type DemotedKey struct {
	ID        string
	Demotions int64
}

// Member is one membership, with the member's email.
type Member struct {
	OrgID     string
	AccountID string
	Email     string
	Role      string
	CreatedAt time.Time
}

// Membership is an organization with the role of one of its members.
type Membership struct {
	Org  Org
	Role string
}

// Invite is a stored invite; the token itself is never stored, only
// its SHA-256 (TokenHash).
type Invite struct {
	ID         string
	OrgID      string
	Email      string
	Role       string
	TokenHash  string
	InvitedBy  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	AcceptedBy string
}

// Errors a Store answers with, besides model.ErrNotFound.
var (
	ErrLastOwner     = errors.New("orgs: the organization would have no owner")
	ErrAlreadyMember = errors.New("orgs: already a member")
	ErrInviteUsed    = errors.New("orgs: the invite was used")
	ErrInviteExpired = errors.New("orgs: the invite expired")
	ErrEmailMismatch = errors.New("orgs: the invite is for another email")
)

// Store keeps organizations, their members and invites. The service
// authorizes every call before making it (access in service.go).
type Store interface {
	// CreateOrg inserts the organization, its account row (email
	// model.OrgEmail) and owner as its first owner, in one transaction.
	CreateOrg(ctx context.Context, o *Org, owner string) error
	// OrgsOf returns the organizations accountID is a member of, by name.
	OrgsOf(ctx context.Context, accountID string) ([]*Membership, error)
	// OrgMembership returns the organization and accountID's role in it,
	// or model.ErrNotFound when they are not a member.
	OrgMembership(ctx context.Context, orgID, accountID string) (*Membership, error)
	// UpdateOrg writes the name and quota of o.
	UpdateOrg(ctx context.Context, o *Org) error
	// OrgMembers returns the members, owners first.
	OrgMembers(ctx context.Context, orgID string) ([]*Member, error)
	// SetOrgMemberRole changes a member's role; ErrLastOwner when that
	// would leave no owner, model.ErrNotFound for no such member. A
	// demotion (owner or admin to member) lowers the member's admin keys of
	// the organization to member keys, counting one more demotion on each
	// (model.APIKey.Demotions), and deletes the SSH keys they registered in
	// it (an admin's only), so that what those held as admin credentials
	// ends (the other servers are told, as for a revocation); it returns
	// both. Any other change (a promotion, owner to admin) returns none.
	SetOrgMemberRole(ctx context.Context, orgID, accountID, role string) (Demotion, error)
	// RemoveOrgMember removes a member, revokes at t the API keys of the
	// organization they hold and deletes the SSH keys they registered in
	// it and the webhook subscriptions (with their deliveries) they
	// created in it, returning those credentials' ids (the other servers are told, as
	// for any revocation); ErrLastOwner when they are its last owner.
	RemoveOrgMember(ctx context.Context, orgID, accountID string, t time.Time) ([]string, error)
	// CreateOrgInvite inserts inv.
	CreateOrgInvite(ctx context.Context, inv *Invite) error
	// OrgInvites returns the invites not yet accepted, newest first.
	OrgInvites(ctx context.Context, orgID string) ([]*Invite, error)
	// DeleteOrgInvite removes an invite of the organization not yet accepted.
	DeleteOrgInvite(ctx context.Context, orgID, id string) error
	// AcceptOrgInvite uses the invite whose token hashes to tokenHash for
	// acct, once: it checks the email, the expiry at now and that acct is
	// not a member, then adds the member and marks the invite accepted,
	// in one transaction. model.ErrNotFound for no such invite.
	AcceptOrgInvite(ctx context.Context, tokenHash string, acct *model.Account, now time.Time) (*Invite, error)
	// CreateOrgAPIKey inserts a key of the organization k.AccountID held
	// by k.MemberID, if they are still a member (else model.ErrNotFound).
	CreateOrgAPIKey(ctx context.Context, k *model.APIKey) error
}
