package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/orgs"
)

var _ orgs.Store = (*Store)(nil)

const orgColumns = `o.id, o.name, o.created_at, o.max_concurrent_sandboxes, o.monthly_sandbox_hours`

func scanOrg(r rowScanner, extra ...any) (*orgs.Org, error) {
	var o orgs.Org
	var created int64
	dest := append([]any{&o.ID, &o.Name, &created, &o.Quota.MaxConcurrentSandboxes, &o.Quota.MonthlySandboxHours}, extra...)
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	o.CreatedAt = fromMicros(created)
	return &o, nil
}

// CreateOrg implements orgs.Store.
func (s *Store) CreateOrg(ctx context.Context, o *orgs.Org, owner string) error {
	if err := checkInt4("max_concurrent_sandboxes", o.Quota.MaxConcurrentSandboxes); err != nil {
		return fmt.Errorf("insert organization: %w", err)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.createAccount(ctx, tx, &model.Account{ID: o.ID, Email: model.OrgEmail(o.ID), CreatedAt: o.CreatedAt}); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO organizations (id, name, created_at, max_concurrent_sandboxes, monthly_sandbox_hours)
			VALUES (?, ?, ?, ?, ?)`), o.ID, o.Name, micros(o.CreatedAt), o.Quota.MaxConcurrentSandboxes, o.Quota.MonthlySandboxHours); err != nil {
			return fmt.Errorf("insert organization: %w", s.mapErr(err))
		}
		return s.insertMember(ctx, tx, o.ID, owner, model.RoleOwner, o.CreatedAt)
	})
}

func (s *Store) insertMember(ctx context.Context, ex execer, orgID, accountID, role string, t time.Time) error {
	_, err := ex.ExecContext(ctx, s.q(`INSERT INTO organization_members (org_id, account_id, role, created_at) VALUES (?, ?, ?, ?)`),
		orgID, accountID, role, micros(t))
	if err != nil {
		err = s.mapErr(err)
		if errors.Is(err, model.ErrConflict) {
			return orgs.ErrAlreadyMember
		}
		return fmt.Errorf("insert member: %w", err)
	}
	return nil
}

// OrgsOf implements orgs.Store.
func (s *Store) OrgsOf(ctx context.Context, accountID string) ([]*orgs.Membership, error) {
	return queryAll(ctx, s, "organizations", func(r rowScanner) (*orgs.Membership, error) {
		var role string
		o, err := scanOrg(r, &role)
		if err != nil {
			return nil, err
		}
		return &orgs.Membership{Org: *o, Role: role}, nil
	}, `SELECT `+orgColumns+`, m.role FROM organizations o
		JOIN organization_members m ON m.org_id = o.id WHERE m.account_id = ? ORDER BY o.name, o.id`, accountID)
}

// OrgMembership implements orgs.Store.
func (s *Store) OrgMembership(ctx context.Context, orgID, accountID string) (*orgs.Membership, error) {
	var role string
	o, err := scanOrg(s.db.QueryRowContext(ctx, s.q(`SELECT `+orgColumns+`, m.role FROM organizations o
		JOIN organization_members m ON m.org_id = o.id WHERE o.id = ? AND m.account_id = ?`), orgID, accountID), &role)
	if err != nil {
		return nil, s.mapErr(err)
	}
	return &orgs.Membership{Org: *o, Role: role}, nil
}

// UpdateOrg implements orgs.Store.
func (s *Store) UpdateOrg(ctx context.Context, o *orgs.Org) error {
	if err := checkInt4("max_concurrent_sandboxes", o.Quota.MaxConcurrentSandboxes); err != nil {
		return fmt.Errorf("update organization: %w", err)
	}
	res, err := s.exec(ctx, s.q(`UPDATE organizations SET name = ?, max_concurrent_sandboxes = ?, monthly_sandbox_hours = ? WHERE id = ?`),
		o.Name, o.Quota.MaxConcurrentSandboxes, o.Quota.MonthlySandboxHours, o.ID)
	if err != nil {
		return fmt.Errorf("update organization: %w", s.mapErr(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return model.ErrNotFound
	}
	return nil
}

// OrgMembers implements orgs.Store.
func (s *Store) OrgMembers(ctx context.Context, orgID string) ([]*orgs.Member, error) {
	return queryAll(ctx, s, "members", scanMember, `SELECT m.org_id, m.account_id, a.email, m.role, m.created_at
		FROM organization_members m JOIN accounts a ON a.id = m.account_id WHERE m.org_id = ?
		ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, a.email`, orgID)
}

func scanMember(r rowScanner) (*orgs.Member, error) {
	var m orgs.Member
	var created int64
	if err := r.Scan(&m.OrgID, &m.AccountID, &m.Email, &m.Role, &created); err != nil {
		return nil, err
	}
	m.CreatedAt = fromMicros(created)
	return &m, nil
}

// lockOrg serialises the membership changes of one organization: on
// Postgres the UPDATE takes the row's lock until the transaction ends;
// SQLite's transactions take the write lock at BEGIN already.
func (s *Store) lockOrg(ctx context.Context, tx *sql.Tx, orgID string) error {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE organizations SET name = name WHERE id = ?`), orgID)
	if err != nil {
		return fmt.Errorf("lock organization: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return model.ErrNotFound
	}
	return nil
}

// otherOwners counts the owners of orgID other than accountID.
func (s *Store) otherOwners(ctx context.Context, tx *sql.Tx, orgID, accountID string) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM organization_members WHERE org_id = ? AND role = 'owner' AND account_id <> ?`),
		orgID, accountID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count owners: %w", err)
	}
	return n, nil
}

func (s *Store) memberRole(ctx context.Context, tx *sql.Tx, orgID, accountID string) (string, error) {
	var role string
	err := tx.QueryRowContext(ctx, s.q(`SELECT role FROM organization_members WHERE org_id = ? AND account_id = ?`), orgID, accountID).Scan(&role)
	return role, s.mapErr(err)
}

// SetOrgMemberRole implements orgs.Store. A demotion to member (from
// owner or admin) counts one more demotion on each admin key of the
// organization the member holds and deletes the SSH keys they registered
// in it, and notifies the other servers of each.
func (s *Store) SetOrgMemberRole(ctx context.Context, orgID, accountID, role string) (orgs.Demotion, error) {
	var out orgs.Demotion
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out = orgs.Demotion{}
		if err := s.lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		cur, err := s.memberRole(ctx, tx, orgID, accountID)
		if err != nil {
			return err
		}
		if cur == model.RoleOwner && role != model.RoleOwner {
			n, err := s.otherOwners(ctx, tx, orgID, accountID)
			if err != nil {
				return err
			}
			if n == 0 {
				return orgs.ErrLastOwner
			}
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE organization_members SET role = ? WHERE org_id = ? AND account_id = ?`), role, orgID, accountID)
		if err != nil {
			return fmt.Errorf("update member: %w", err)
		}
		if model.EffectiveKeyRole(model.RoleAdmin, cur) != model.RoleAdmin || model.EffectiveKeyRole(model.RoleAdmin, role) == model.RoleAdmin {
			return nil // not a demotion: no admin key of theirs acts lower than it did
		}
		const mine = ` WHERE account_id = ? AND member_id = ? AND role = ? AND revoked_at IS NULL`
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET demotions = demotions + 1`+mine), orgID, accountID, model.RoleAdmin); err != nil {
			return fmt.Errorf("demote member's keys: %w", err)
		}
		out.Keys, err = queryAllIn(ctx, tx, s, "member's keys", func(r rowScanner) (orgs.DemotedKey, error) {
			var k orgs.DemotedKey
			err := r.Scan(&k.ID, &k.Demotions)
			return k, err
		}, `SELECT id, demotions FROM api_keys`+mine+` ORDER BY id`, orgID, accountID, model.RoleAdmin)
		if err != nil {
			return err
		}
		for _, k := range out.Keys {
			if err := s.notifyDemoted(ctx, tx, k.ID, k.Demotions); err != nil {
				return err
			}
		}
		if out.SSHKeys, err = s.memberSSHKeys(ctx, tx, orgID, accountID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM ssh_keys WHERE account_id = ? AND member_id = ?`), orgID, accountID); err != nil {
			return fmt.Errorf("delete member's ssh keys: %w", err)
		}
		for _, id := range out.SSHKeys {
			if err := s.notifyRevoked(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// RemoveOrgMember implements orgs.Store.
func (s *Store) RemoveOrgMember(ctx context.Context, orgID, accountID string, t time.Time) ([]string, error) {
	var revoked []string
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		revoked = nil
		if err := s.lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		cur, err := s.memberRole(ctx, tx, orgID, accountID)
		if err != nil {
			return err
		}
		if cur == model.RoleOwner {
			n, err := s.otherOwners(ctx, tx, orgID, accountID)
			if err != nil {
				return err
			}
			if n == 0 {
				return orgs.ErrLastOwner
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM organization_members WHERE org_id = ? AND account_id = ?`), orgID, accountID); err != nil {
			return fmt.Errorf("delete member: %w", err)
		}
		revoked, err = queryAllIn(ctx, tx, s, "member's keys", scanString,
			`SELECT id FROM api_keys WHERE account_id = ? AND member_id = ? AND revoked_at IS NULL`, orgID, accountID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = ? WHERE account_id = ? AND member_id = ? AND revoked_at IS NULL`),
			micros(t), orgID, accountID); err != nil {
			return fmt.Errorf("revoke member's keys: %w", err)
		}
		sshIDs, err := s.memberSSHKeys(ctx, tx, orgID, accountID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM ssh_keys WHERE account_id = ? AND member_id = ?`), orgID, accountID); err != nil {
			return fmt.Errorf("delete member's ssh keys: %w", err)
		}
		revoked = append(revoked, sshIDs...)
		if err := s.deleteMemberWebhooks(ctx, tx, orgID, accountID); err != nil {
			return err
		}
		for _, id := range revoked {
			if err := s.notifyRevoked(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	return revoked, err
}

// memberSSHKeys returns the ids of the SSH keys accountID registered in
// the organization orgID.
func (s *Store) memberSSHKeys(ctx context.Context, tx *sql.Tx, orgID, accountID string) ([]string, error) {
	return queryAllIn(ctx, tx, s, "member's ssh keys", scanString, `SELECT id FROM ssh_keys WHERE account_id = ? AND member_id = ?`, orgID, accountID)
}

const inviteColumns = `id, org_id, email, role, token_hash, invited_by, created_at, expires_at, accepted_at, accepted_by`

func scanInvite(r rowScanner) (*orgs.Invite, error) {
	var inv orgs.Invite
	var created, expires int64
	var accepted sql.NullInt64
	if err := r.Scan(&inv.ID, &inv.OrgID, &inv.Email, &inv.Role, &inv.TokenHash, &inv.InvitedBy, &created, &expires, &accepted, &inv.AcceptedBy); err != nil {
		return nil, err
	}
	inv.CreatedAt, inv.ExpiresAt, inv.AcceptedAt = fromMicros(created), fromMicros(expires), fromNullMicros(accepted)
	return &inv, nil
}

// CreateOrgInvite implements orgs.Store.
func (s *Store) CreateOrgInvite(ctx context.Context, inv *orgs.Invite) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO organization_invites (`+inviteColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		inv.ID, inv.OrgID, inv.Email, inv.Role, inv.TokenHash, inv.InvitedBy, micros(inv.CreatedAt), micros(inv.ExpiresAt), nullMicros(inv.AcceptedAt), inv.AcceptedBy)
	if err != nil {
		return fmt.Errorf("insert invite: %w", s.mapErr(err))
	}
	return nil
}

// OrgInvites implements orgs.Store.
func (s *Store) OrgInvites(ctx context.Context, orgID string) ([]*orgs.Invite, error) {
	return queryAll(ctx, s, "invites", scanInvite, `SELECT `+inviteColumns+` FROM organization_invites
		WHERE org_id = ? AND accepted_at IS NULL ORDER BY created_at DESC, id DESC`, orgID)
}

// DeleteOrgInvite implements orgs.Store.
func (s *Store) DeleteOrgInvite(ctx context.Context, orgID, id string) error {
	res, err := s.exec(ctx, s.q(`DELETE FROM organization_invites WHERE org_id = ? AND id = ? AND accepted_at IS NULL`), orgID, id)
	if err != nil {
		return fmt.Errorf("delete invite: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return model.ErrNotFound
	}
	return nil
}

// AcceptOrgInvite implements orgs.Store.
func (s *Store) AcceptOrgInvite(ctx context.Context, tokenHash string, acct *model.Account, now time.Time) (*orgs.Invite, error) {
	var inv *orgs.Invite
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		inv, err = scanInvite(tx.QueryRowContext(ctx, s.q(`SELECT `+inviteColumns+` FROM organization_invites WHERE token_hash = ?`), tokenHash))
		if err != nil {
			return s.mapErr(err)
		}
		switch {
		case inv.AcceptedAt != nil:
			return orgs.ErrInviteUsed
		case !now.Before(inv.ExpiresAt):
			return orgs.ErrInviteExpired
		case !strings.EqualFold(inv.Email, acct.Email):
			return orgs.ErrEmailMismatch
		}
		if err := s.lockOrg(ctx, tx, inv.OrgID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE organization_invites SET accepted_at = ?, accepted_by = ? WHERE id = ? AND accepted_at IS NULL`),
			micros(now), acct.ID, inv.ID)
		if err != nil {
			return fmt.Errorf("accept invite: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return orgs.ErrInviteUsed
		}
		inv.AcceptedAt, inv.AcceptedBy = &now, acct.ID
		return s.insertMember(ctx, tx, inv.OrgID, acct.ID, inv.Role, now)
	})
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// CreateOrgAPIKey implements orgs.Store.
func (s *Store) CreateOrgAPIKey(ctx context.Context, k *model.APIKey) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockOrg(ctx, tx, k.AccountID); err != nil {
			return err
		}
		if _, err := s.memberRole(ctx, tx, k.AccountID, k.MemberID); err != nil {
			return err
		}
		return s.createKey(ctx, tx, k)
	})
}
