package orgs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/model"
)

// Deps is what the organizations service needs of the control plane.
type Deps struct {
	Store Store
	Log   *slog.Logger
	Now   func() time.Time
	// Revoked ends at once what a revoked key holds (its streams,
	// terminals), as DELETE /v1/api-keys/{id} does.
	Revoked func(keyID string)
	// Demoted ends at once what admin key keyID held before its holder's
	// demotion to member made it a member key, its count of demotions now
	// demotions (its terminals, its streams), as Revoked does for a
	// revoked key; the key goes on, as a member's.
	Demoted func(keyID string, demotions int64)
	// Limits are the server's per-account limits, the ceiling of an
	// organization's quota (0: none).
	Limits api.OrganizationQuota
}

// Service serves the organizations routes.
type Service struct{ d Deps }

// New returns the service; Store, Log, Now, Revoked and Demoted are required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Log == nil || d.Now == nil || d.Revoked == nil || d.Demoted == nil {
		return nil, errors.New("orgs: a dependency is missing")
	}
	return &Service{d: d}, nil
}

// rank orders the organization roles; 0 is none.
func rank(role string) int {
	switch role {
	case model.RoleOwner:
		return 3
	case model.RoleAdmin:
		return 2
	case model.RoleMember:
		return 1
	}
	return 0
}

func notFound(orgID string) error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "organization %s not found", orgID).
		WithHint("`boxkite org ls` lists the organizations you are a member of")
}

// needRole refuses a member whose role is below need; the hint names who
// may do it: owners only when need is owner.
func needRole(need, have string) error {
	who := "an owner or admin"
	if need == model.RoleOwner {
		who = "an owner"
	}
	return api.Errorf(http.StatusForbidden, api.CodeForbidden, "this needs the %s role in the organization; yours is %s", need, have).
		WithHint("ask " + who + " of the organization (`boxkite org members` lists them)")
}

// access authorizes the caller for orgID: the person behind the
// credential must be a member with at least role need, and a key of an
// organization reaches that organization only. Anyone else gets the 404
// of an organization that does not exist.
func (s *Service) access(ctx context.Context, orgID, need string) (*Membership, error) {
	c := authz.From(ctx)
	if c.Org() != nil && c.Account.ID != orgID {
		return nil, notFound(orgID)
	}
	m, err := s.d.Store.OrgMembership(ctx, orgID, c.PersonID())
	if errors.Is(err, model.ErrNotFound) {
		return nil, notFound(orgID)
	}
	if err != nil {
		return nil, fmt.Errorf("look up membership: %w", err)
	}
	if rank(m.Role) < rank(need) {
		return nil, needRole(need, m.Role)
	}
	return m, nil
}

var errPersonalOnly = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeForbidden,
	Message: "an organization's API key cannot do this; it acts for its organization only",
	Hint:    "use a key of your personal account, or log in (`boxkite login`)",
}

// person returns the caller's personal account, refusing a key of an
// organization.
func person(ctx context.Context) (*model.Account, error) {
	c := authz.From(ctx)
	if c.Org() != nil {
		return nil, errPersonalOnly
	}
	return c.Account, nil
}

func (o *Org) toAPI(role string) api.Organization {
	return api.Organization{ID: o.ID, Name: o.Name, CreatedAt: o.CreatedAt.UTC(), Role: role, Quota: o.Quota}
}

func (inv *Invite) toAPI() api.OrganizationInvite {
	out := api.OrganizationInvite{
		ID: inv.ID, Email: inv.Email, Role: inv.Role, InvitedBy: inv.InvitedBy,
		CreatedAt: inv.CreatedAt.UTC(), ExpiresAt: inv.ExpiresAt.UTC(),
	}
	if inv.AcceptedAt != nil {
		t := inv.AcceptedAt.UTC()
		out.AcceptedAt = &t
	}
	return out
}
