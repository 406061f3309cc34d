package orgs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

const (
	maxNameLen = api.MaxOrgNameLen
	// InvitePrefix starts every invite token.
	InvitePrefix = "bxk_inv_"
)

// checkName trims and checks an organization's or key's name.
func checkName(field, s string, limit int) (string, error) {
	name := strings.TrimSpace(s)
	if n := utf8.RuneCountInString(name); n < 1 || n > limit || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return "", httpx.Invalid(field, fmt.Sprintf("%s must be 1 to %d printable characters", field, limit), "")
	}
	return name, nil
}

func checkRole(role, def string) (string, error) {
	if role == "" {
		return def, nil
	}
	if rank(role) == 0 {
		return "", httpx.Invalid("role", fmt.Sprintf("role %q is not owner, admin or member", role), "")
	}
	return role, nil
}

// create serves POST /v1/organizations.
func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateOrganizationRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	name, err := checkName("name", req.Name, maxNameLen)
	if err != nil {
		return err
	}
	p, err := person(r.Context())
	if err != nil {
		return err
	}
	o := &Org{ID: model.NewID(), Name: name, CreatedAt: s.d.Now()}
	if err := s.d.Store.CreateOrg(r.Context(), o, p.ID); err != nil {
		return fmt.Errorf("create organization: %w", err)
	}
	s.d.Log.InfoContext(r.Context(), "organization created", "org", o.ID, "owner", p.ID)
	httpx.WriteJSON(w, http.StatusCreated, o.toAPI(model.RoleOwner))
	return nil
}

// list serves GET /v1/organizations: a key of an organization sees that
// organization only.
func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	c := authz.From(r.Context())
	var ms []*Membership
	if c.Org() != nil {
		m, err := s.access(r.Context(), c.Account.ID, model.RoleMember)
		if err != nil {
			return err
		}
		ms = []*Membership{m}
	} else {
		var err error
		if ms, err = s.d.Store.OrgsOf(r.Context(), c.PersonID()); err != nil {
			return fmt.Errorf("list organizations: %w", err)
		}
	}
	return writeAll(w, ms, func(m *Membership) api.Organization { return m.Org.toAPI(m.Role) })
}

// get serves GET /v1/organizations/{org_id}.
func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	m, err := s.access(r.Context(), r.PathValue("org_id"), model.RoleMember)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, m.Org.toAPI(m.Role))
	return nil
}

// checkQuota refuses a quota that is negative or above the server's
// per-account limit.
func (s *Service) checkQuota(q api.OrganizationQuota) error {
	l := s.d.Limits
	switch {
	case q.MaxConcurrentSandboxes < 0:
		return httpx.Invalid("quota.max_concurrent_sandboxes", "max_concurrent_sandboxes must not be negative", "0 means the server's limit")
	case l.MaxConcurrentSandboxes > 0 && q.MaxConcurrentSandboxes > l.MaxConcurrentSandboxes:
		return httpx.Invalid("quota.max_concurrent_sandboxes", fmt.Sprintf("max_concurrent_sandboxes must be at most the server's %d", l.MaxConcurrentSandboxes), "")
	case q.MonthlySandboxHours < 0 || math.IsNaN(q.MonthlySandboxHours) || math.IsInf(q.MonthlySandboxHours, 0):
		return httpx.Invalid("quota.monthly_sandbox_hours", "monthly_sandbox_hours must be a number, not negative", "0 means the server's limit")
	case l.MonthlySandboxHours > 0 && q.MonthlySandboxHours > l.MonthlySandboxHours:
		return httpx.Invalid("quota.monthly_sandbox_hours", fmt.Sprintf("monthly_sandbox_hours must be at most the server's %g", l.MonthlySandboxHours), "")
	}
	return nil
}

// update serves PATCH /v1/organizations/{org_id}.
func (s *Service) update(w http.ResponseWriter, r *http.Request) error {
	var req api.UpdateOrganizationRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	m, err := s.access(r.Context(), r.PathValue("org_id"), model.RoleAdmin)
	if err != nil {
		return err
	}
	o := m.Org
	if req.Name != nil {
		if o.Name, err = checkName("name", *req.Name, maxNameLen); err != nil {
			return err
		}
	}
	if req.Quota != nil {
		if err := s.checkQuota(*req.Quota); err != nil {
			return err
		}
		o.Quota = *req.Quota
	}
	if err := s.d.Store.UpdateOrg(r.Context(), &o); err != nil {
		return fmt.Errorf("update organization: %w", err)
	}
	httpx.WriteJSON(w, http.StatusOK, o.toAPI(m.Role))
	return nil
}

func memberToAPI(m *Member) api.OrganizationMember {
	return api.OrganizationMember{AccountID: m.AccountID, Email: m.Email, Role: m.Role, JoinedAt: m.CreatedAt.UTC()}
}

// members serves GET /v1/organizations/{org_id}/members.
func (s *Service) members(w http.ResponseWriter, r *http.Request) error {
	orgID, err := s.orgOf(r, model.RoleMember)
	if err != nil {
		return err
	}
	ms, err := s.d.Store.OrgMembers(r.Context(), orgID)
	if err != nil {
		return fmt.Errorf("list members: %w", err)
	}
	return writeAll(w, ms, memberToAPI)
}

// orgOf is the organization of r's {org_id}, once the caller's membership
// in it has the role need.
func (s *Service) orgOf(r *http.Request, need string) (string, error) {
	orgID := r.PathValue("org_id")
	_, err := s.access(r.Context(), orgID, need)
	return orgID, err
}

// writeAll answers recs in their wire form (conv).
func writeAll[T, U any](w http.ResponseWriter, recs []T, conv func(T) U) error {
	out := make([]U, len(recs))
	for i, rec := range recs {
		out[i] = conv(rec)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

var errLastOwner = &api.Error{
	Status: http.StatusConflict, Code: api.CodeLastOwner,
	Message: "the organization would have no owner",
	Hint:    "make another member owner first (`boxkite org set-role ORG ACCOUNT owner`)",
}

func memberNotFound(id string) error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "member %s not found", id).
		WithHint("`boxkite org members` lists the members and their account ids")
}

// target loads the member a members route names, with the caller's own
// membership, and checks that the caller may change them: admins change
// admins and members; only owners change owners.
func (s *Service) target(r *http.Request, self bool) (caller *Membership, m *Member, err error) {
	orgID, id := r.PathValue("org_id"), r.PathValue("account_id")
	need := model.RoleAdmin
	if self {
		need = model.RoleMember
	}
	caller, err = s.access(r.Context(), orgID, need)
	if err != nil {
		return nil, nil, err
	}
	ms, err := s.d.Store.OrgMembers(r.Context(), orgID)
	if err != nil {
		return nil, nil, fmt.Errorf("list members: %w", err)
	}
	for _, x := range ms {
		if x.AccountID == id {
			m = x
		}
	}
	if m == nil {
		return nil, nil, memberNotFound(id)
	}
	if !self && m.Role == model.RoleOwner && caller.Role != model.RoleOwner {
		return nil, nil, needRole(model.RoleOwner, caller.Role)
	}
	return caller, m, nil
}

// setRole serves PATCH /v1/organizations/{org_id}/members/{account_id}.
func (s *Service) setRole(w http.ResponseWriter, r *http.Request) error {
	var req api.UpdateMemberRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	role, err := checkRole(req.Role, "")
	if err != nil {
		return err
	}
	if role == "" {
		return httpx.Invalid("role", "role is required", "use owner, admin or member")
	}
	caller, m, err := s.target(r, false)
	if err != nil {
		return err
	}
	if role == model.RoleOwner && caller.Role != model.RoleOwner {
		return needRole(model.RoleOwner, caller.Role)
	}
	demoted, err := s.d.Store.SetOrgMemberRole(r.Context(), m.OrgID, m.AccountID, role)
	switch {
	case errors.Is(err, ErrLastOwner):
		return errLastOwner
	case errors.Is(err, model.ErrNotFound):
		return memberNotFound(m.AccountID)
	case err != nil:
		return fmt.Errorf("change role: %w", err)
	}
	// A demotion ends what the member's admin credentials hold (a
	// terminal, a stream), as a removal does; a takeover token their keys
	// minted is refused at use (its count of demotions is behind the
	// key's), one their SSH keys minted as theirs are gone.
	for _, k := range demoted.Keys {
		s.d.Demoted(k.ID, k.Demotions)
	}
	for _, id := range demoted.SSHKeys {
		s.d.Revoked(id)
	}
	if len(demoted.Keys)+len(demoted.SSHKeys) > 0 {
		s.d.Log.InfoContext(r.Context(), "organization member demoted", "org", m.OrgID, "member", m.AccountID,
			"keys_lowered", len(demoted.Keys), "ssh_keys_deleted", len(demoted.SSHKeys))
	}
	m.Role = role
	httpx.WriteJSON(w, http.StatusOK, memberToAPI(m))
	return nil
}

// remove serves DELETE /v1/organizations/{org_id}/members/{account_id}:
// an owner or admin removes a member, or a member leaves (their own
// account id). The member's keys of the organization are revoked in the
// same transaction and end what they hold at once.
func (s *Service) remove(w http.ResponseWriter, r *http.Request) error {
	self := r.PathValue("account_id") == authz.From(r.Context()).PersonID()
	_, m, err := s.target(r, self)
	if err != nil {
		return err
	}
	revoked, err := s.d.Store.RemoveOrgMember(r.Context(), m.OrgID, m.AccountID, s.d.Now())
	switch {
	case errors.Is(err, ErrLastOwner):
		return errLastOwner
	case errors.Is(err, model.ErrNotFound):
		return memberNotFound(m.AccountID)
	case err != nil:
		return fmt.Errorf("remove member: %w", err)
	}
	for _, id := range revoked {
		s.d.Revoked(id)
	}
	s.d.Log.InfoContext(r.Context(), "organization member removed", "org", m.OrgID, "member", m.AccountID, "keys_revoked", len(revoked))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// hashToken is the stored form of an invite token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// invite serves POST /v1/organizations/{org_id}/invites.
func (s *Service) invite(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateInviteRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	email := strings.ToLower(strings.TrimSpace(req.Email))
	if local, domain, ok := strings.Cut(email, "@"); !ok || local == "" || domain == "" || len(email) > 254 {
		return httpx.Invalid("email", "email is not an email address", "the invitee's account email, such as you@example.com")
	}
	role, err := checkRole(req.Role, model.RoleMember)
	if err != nil {
		return err
	}
	m, err := s.access(r.Context(), r.PathValue("org_id"), model.RoleAdmin)
	if err != nil {
		return err
	}
	if role == model.RoleOwner && m.Role != model.RoleOwner {
		return needRole(model.RoleOwner, m.Role)
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails on Linux (Go 1.24+)
	token := InvitePrefix + base64.RawURLEncoding.EncodeToString(b[:])
	now := s.d.Now()
	inv := &Invite{
		ID: model.NewID(), OrgID: m.Org.ID, Email: email, Role: role, TokenHash: hashToken(token),
		InvitedBy: authz.From(r.Context()).PersonID(), CreatedAt: now, ExpiresAt: now.Add(api.InviteTTL),
	}
	if err := s.d.Store.CreateOrgInvite(r.Context(), inv); err != nil {
		return fmt.Errorf("create invite: %w", err)
	}
	out := inv.toAPI()
	out.Token = token
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// invites serves GET /v1/organizations/{org_id}/invites.
func (s *Service) invites(w http.ResponseWriter, r *http.Request) error {
	orgID, err := s.orgOf(r, model.RoleAdmin)
	if err != nil {
		return err
	}
	invs, err := s.d.Store.OrgInvites(r.Context(), orgID)
	if err != nil {
		return fmt.Errorf("list invites: %w", err)
	}
	return writeAll(w, invs, (*Invite).toAPI)
}

// revokeInvite serves DELETE /v1/organizations/{org_id}/invites/{invite_id}.
func (s *Service) revokeInvite(w http.ResponseWriter, r *http.Request) error {
	orgID, err := s.orgOf(r, model.RoleAdmin)
	if err != nil {
		return err
	}
	id := r.PathValue("invite_id")
	err = s.d.Store.DeleteOrgInvite(r.Context(), orgID, id)
	if errors.Is(err, model.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "invite %s not found", id).
			WithHint(fmt.Sprintf("`boxkite api /v1/organizations/%s/invites` lists the invites not yet accepted", orgID))
	}
	if err != nil {
		return fmt.Errorf("revoke invite: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

var errInviteNotFound = &api.Error{
	Status: http.StatusNotFound, Code: api.CodeNotFound,
	Message: "no such invite",
	Hint:    "check the token (" + InvitePrefix + "…) the inviter gave you",
}

// accept serves POST /v1/organizations/accept-invite.
func (s *Service) accept(w http.ResponseWriter, r *http.Request) error {
	var req api.AcceptInviteRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	if !strings.HasPrefix(req.Token, InvitePrefix) || len(req.Token) > 200 {
		return errInviteNotFound
	}
	p, err := person(r.Context())
	if err != nil {
		return err
	}
	inv, err := s.d.Store.AcceptOrgInvite(r.Context(), hashToken(req.Token), p, s.d.Now())
	switch {
	case errors.Is(err, model.ErrNotFound):
		return errInviteNotFound
	case errors.Is(err, ErrInviteUsed):
		return api.Errorf(http.StatusConflict, api.CodeInviteUsed, "the invite was used already").
			WithHint("an invite works once; ask for a new one")
	case errors.Is(err, ErrInviteExpired):
		return api.Errorf(http.StatusGone, api.CodeInviteExpired, "the invite expired").
			WithHint("invites last 7 days; ask for a new one")
	case errors.Is(err, ErrEmailMismatch):
		return api.Errorf(http.StatusForbidden, api.CodeEmailMismatch, "the invite is for another email than your account's").
			WithHint("accept it logged in as the invited email (`boxkite whoami` shows yours)")
	case errors.Is(err, ErrAlreadyMember):
		return api.Errorf(http.StatusConflict, api.CodeAlreadyMember, "you are a member of this organization already").
			WithHint("`boxkite org ls` lists your organizations")
	case err != nil:
		return fmt.Errorf("accept invite: %w", err)
	}
	m, err := s.d.Store.OrgMembership(r.Context(), inv.OrgID, p.ID)
	if err != nil {
		return fmt.Errorf("look up membership: %w", err)
	}
	s.d.Log.InfoContext(r.Context(), "organization invite accepted", "org", inv.OrgID, "member", p.ID)
	httpx.WriteJSON(w, http.StatusOK, m.Org.toAPI(m.Role))
	return nil
}

// createKey serves POST /v1/organizations/{org_id}/api-keys: a member
// issues themself a key of the organization, with their personal
// credentials. The key's role may not exceed what their role there allows
// (model.EffectiveKeyRole); it is lowered with their role and stops with
// their membership.
func (s *Service) createKey(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateAPIKeyRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	name, err := checkName("name", req.Name, api.MaxKeyNameLen)
	if err != nil {
		return err
	}
	expires, err := httpx.KeyExpiry(s.d.Now(), req.ExpiresInSeconds)
	if err != nil {
		return err
	}
	p, err := person(r.Context())
	if err != nil {
		return err
	}
	m, err := s.access(r.Context(), r.PathValue("org_id"), model.RoleMember)
	if err != nil {
		return err
	}
	allowed := model.EffectiveKeyRole(model.RoleAdmin, m.Role)
	role := req.Role
	switch role {
	case "":
		role = allowed
	case model.RoleAdmin, model.RoleMember:
		if model.EffectiveKeyRole(role, m.Role) != role {
			return api.Errorf(http.StatusForbidden, api.CodeForbidden, "your role in the organization (%s) allows %s keys only", m.Role, allowed).
				WithHint(`ask for {"role": "member"}, or ask an owner to make you admin`)
		}
	default:
		return httpx.Invalid("role", fmt.Sprintf("role %q is not admin or member", req.Role), "")
	}
	secret := model.NewAPIKey()
	k := &model.APIKey{
		ID: model.NewID(), AccountID: m.Org.ID, MemberID: p.ID, Name: name,
		Hash: model.HashAPIKey(secret), Prefix: model.DisplayPrefix(secret), Role: role, CreatedAt: s.d.Now(),
		ExpiresAt: expires,
	}
	if err := s.d.Store.CreateOrgAPIKey(r.Context(), k); err != nil {
		if errors.Is(err, model.ErrNotFound) {
			return notFound(m.Org.ID)
		}
		return fmt.Errorf("create api key: %w", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, api.APIKeyCreated{APIKey: k.ToAPI(s.d.Now()), Key: secret})
	return nil
}
