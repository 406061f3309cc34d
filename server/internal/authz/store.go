package authz

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// The authorization of every Store method, one wrapper each (Store, in
// authz.go). Kinds:
//
//   - account: the account id argument must be the caller's;
//   - record: the account of the record written must be the caller's;
//   - result: the record found must belong to the caller's account;
//   - update: the record updated must belong to the caller's account
//     (checked inside the transaction, before fn);
//   - system: every account's records, for the server's own work: refused
//     to a caller;
//   - scoped: keyed by a record the handler loaded for the caller (a
//     sandbox, an image build, an idempotency record of its credential),
//     so the check was made there;
//   - open: needs no caller (authentication, signup and login run before
//     there is one) or holds no account's data.
//
// A refused account check answers model.ErrNotFound, as a lookup of
// another account's record does. TestStoreAuthorized fails for a Store
// method without a wrapper here or without a row in its table.

// APIKeyByHash: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*model.APIKey, *model.Account, error) {
	return s.inner.APIKeyByHash(ctx, hash)
}

// AccountByEmail: system (every account's records: the server's own work only).
func (s *Store) AccountByEmail(ctx context.Context, email string) (*model.Account, error) {
	if err := s.system(ctx); err != nil {
		return nil, err
	}
	return s.inner.AccountByEmail(ctx, email)
}

// AccountByID: account (the account id argument must be the caller's).
func (s *Store) AccountByID(ctx context.Context, id string) (*model.Account, error) {
	if err := s.account(ctx, id); err != nil {
		return nil, err
	}
	return s.inner.AccountByID(ctx, id)
}

// AllowedCommands: account (the account id argument must be the caller's).
func (s *Store) AllowedCommands(ctx context.Context, accountID string) ([]api.CommandRule, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.AllowedCommands(ctx, accountID)
}

// AppendExecLog: record (the record's account must be the caller's).
func (s *Store) AppendExecLog(ctx context.Context, e *model.ExecLogEntry) error {
	if err := s.account(ctx, e.AccountID); err != nil {
		return err
	}
	return s.inner.AppendExecLog(ctx, e)
}

// AttachVolumes: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) AttachVolumes(ctx context.Context, sandboxID string, volumeIDs []string) error {
	return s.inner.AttachVolumes(ctx, sandboxID, volumeIDs)
}

// BeatInstance: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) BeatInstance(ctx context.Context, id string, token int64, now time.Time, until time.Time) (int64, error) {
	return s.inner.BeatInstance(ctx, id, token, now, until)
}

// ClaimIdempotencyKey: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ClaimIdempotencyKey(ctx context.Context, rec *model.IdempotencyRecord, staleBefore time.Time) (*model.IdempotencyRecord, error) {
	return s.inner.ClaimIdempotencyKey(ctx, rec, staleBefore)
}

// Close: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) Close() error {
	return s.inner.Close()
}

// CompleteIdempotencyKey: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) CompleteIdempotencyKey(ctx context.Context, rec *model.IdempotencyRecord) error {
	return s.inner.CompleteIdempotencyKey(ctx, rec)
}

// CountActiveSandboxes: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) CountActiveSandboxes(ctx context.Context, accountID string) (int, error) {
	return s.inner.CountActiveSandboxes(ctx, accountID)
}

// CreateAPIKey: record (the record's account must be the caller's).
func (s *Store) CreateAPIKey(ctx context.Context, k *model.APIKey) error {
	if err := s.account(ctx, k.AccountID); err != nil {
		return err
	}
	return s.inner.CreateAPIKey(ctx, k)
}

// CreateAccount: system (every account's records: the server's own work only).
func (s *Store) CreateAccount(ctx context.Context, a *model.Account) error {
	if err := s.system(ctx); err != nil {
		return err
	}
	return s.inner.CreateAccount(ctx, a)
}

// CreateAccountWithPassword: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) CreateAccountWithPassword(ctx context.Context, a *model.Account, passwordHash string) error {
	return s.inner.CreateAccountWithPassword(ctx, a, passwordHash)
}

// CreateMCPConnection: record (the record's account must be the caller's).
func (s *Store) CreateMCPConnection(ctx context.Context, c *model.MCPConnection) error {
	if err := s.account(ctx, c.AccountID); err != nil {
		return err
	}
	return s.inner.CreateMCPConnection(ctx, c)
}

// CreateSSHKey: record (the record's account must be the caller's).
func (s *Store) CreateSSHKey(ctx context.Context, k *model.SSHKey) error {
	if err := s.account(ctx, k.AccountID); err != nil {
		return err
	}
	return s.inner.CreateSSHKey(ctx, k)
}

// CreateSandbox: record (the record's account must be the caller's).
func (s *Store) CreateSandbox(ctx context.Context, sb *model.Sandbox) error {
	if err := s.account(ctx, sb.AccountID); err != nil {
		return err
	}
	return s.inner.CreateSandbox(ctx, sb)
}

// CreateVolume: record (the record's account must be the caller's).
func (s *Store) CreateVolume(ctx context.Context, v *model.Volume) error {
	if err := s.account(ctx, v.AccountID); err != nil {
		return err
	}
	return s.inner.CreateVolume(ctx, v)
}

// DeleteMCPConnection: account (the account id argument must be the caller's).
func (s *Store) DeleteMCPConnection(ctx context.Context, accountID string, id string) error {
	if err := s.account(ctx, accountID); err != nil {
		return err
	}
	return s.inner.DeleteMCPConnection(ctx, accountID, id)
}

// DeleteSSHKey: account (the account id argument must be the caller's).
func (s *Store) DeleteSSHKey(ctx context.Context, accountID string, id string) error {
	if err := s.account(ctx, accountID); err != nil {
		return err
	}
	return s.inner.DeleteSSHKey(ctx, accountID, id)
}

// DeleteSandbox: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) DeleteSandbox(ctx context.Context, id string) error {
	return s.inner.DeleteSandbox(ctx, id)
}

// DeleteVolume: account (the account id argument must be the caller's).
func (s *Store) DeleteVolume(ctx context.Context, accountID string, id string) error {
	if err := s.account(ctx, accountID); err != nil {
		return err
	}
	return s.inner.DeleteVolume(ctx, accountID, id)
}

// EndInstance: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) EndInstance(ctx context.Context, id string) error {
	return s.inner.EndInstance(ctx, id)
}

// EnsureAccountKey: system (every account's records: the server's own work only).
func (s *Store) EnsureAccountKey(ctx context.Context, a *model.Account, k *model.APIKey) (*model.Account, *model.APIKey, error) {
	if err := s.system(ctx); err != nil {
		return nil, nil, err
	}
	return s.inner.EnsureAccountKey(ctx, a, k)
}

// EnsureSetting: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) EnsureSetting(ctx context.Context, name string, value string) (string, error) {
	return s.inner.EnsureSetting(ctx, name, value)
}

// ExecLog: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ExecLog(ctx context.Context, sandboxID string, limit int, offset int) ([]*model.ExecLogEntry, int, error) {
	return s.inner.ExecLog(ctx, sandboxID, limit, offset)
}

// ExecLogAfter: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ExecLogAfter(ctx context.Context, sandboxID string, afterSeq int64, limit int) ([]*model.ExecLogEntry, error) {
	return s.inner.ExecLogAfter(ctx, sandboxID, afterSeq, limit)
}

// ExecLogHead: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ExecLogHead(ctx context.Context, sandboxID string) (model.ExecLogHead, error) {
	return s.inner.ExecLogHead(ctx, sandboxID)
}

// ExecLogSeq: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ExecLogSeq(ctx context.Context, sandboxID string, entryID string) (int64, error) {
	return s.inner.ExecLogSeq(ctx, sandboxID, entryID)
}

// ExpiredSandboxes: system (every account's records: the server's own work only).
func (s *Store) ExpiredSandboxes(ctx context.Context, t time.Time) ([]*model.Sandbox, error) {
	if err := s.system(ctx); err != nil {
		return nil, err
	}
	return s.inner.ExpiredSandboxes(ctx, t)
}

// FinishSnapshot: update (the record updated must be the caller's account's).
func (s *Store) FinishSnapshot(ctx context.Context, id string, now time.Time, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	return s.inner.FinishSnapshot(ctx, id, now, func(rec *model.Snapshot) error {
		if err := s.account(ctx, rec.AccountID); err != nil {
			return err
		}
		return fn(rec)
	})
}

// ForgetInstances: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) ForgetInstances(ctx context.Context, before time.Time) error {
	return s.inner.ForgetInstances(ctx, before)
}

// ListAPIKeys: account (the account id argument must be the caller's).
func (s *Store) ListAPIKeys(ctx context.Context, accountID string) ([]*model.APIKey, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.ListAPIKeys(ctx, accountID)
}

// ListSSHKeys: account (the account id argument must be the caller's).
func (s *Store) ListSSHKeys(ctx context.Context, accountID string) ([]*model.SSHKey, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.ListSSHKeys(ctx, accountID)
}

// ListSandboxes: account (the account id argument must be the caller's).
func (s *Store) ListSandboxes(ctx context.Context, accountID string, activeOnly bool) ([]*model.Sandbox, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.ListSandboxes(ctx, accountID, activeOnly)
}

// ListSandboxPage: account (the account id argument must be the caller's).
func (s *Store) ListSandboxPage(ctx context.Context, accountID string, p model.SandboxPage) ([]*model.Sandbox, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.ListSandboxPage(ctx, accountID, p)
}

// ListSnapshots: account (the account id argument must be the caller's).
func (s *Store) ListSnapshots(ctx context.Context, accountID string, sandboxID string) ([]*model.Snapshot, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.ListSnapshots(ctx, accountID, sandboxID)
}

// ListVolumes: account (the account id argument must be the caller's).
func (s *Store) ListVolumes(ctx context.Context, accountID string) ([]*model.Volume, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.ListVolumes(ctx, accountID)
}

// LiveInstances: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) LiveInstances(ctx context.Context, now time.Time) (map[string]int64, error) {
	return s.inner.LiveInstances(ctx, now)
}

// MCPConnections: account (the account id argument must be the caller's).
func (s *Store) MCPConnections(ctx context.Context, accountID string) ([]*model.MCPConnection, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.MCPConnections(ctx, accountID)
}

// PasswordHash: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) PasswordHash(ctx context.Context, email string) (*model.Account, string, error) {
	return s.inner.PasswordHash(ctx, email)
}

// Ping: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) Ping(ctx context.Context) error {
	return s.inner.Ping(ctx)
}

// PurgeIdempotencyKeys: system (every account's records: the server's own work only).
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, t time.Time) error {
	if err := s.system(ctx); err != nil {
		return err
	}
	return s.inner.PurgeIdempotencyKeys(ctx, t)
}

// Recording: account (the account id argument must be the caller's).
func (s *Store) Recording(ctx context.Context, accountID string, sandboxID string, id string) (*model.Recording, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.Recording(ctx, accountID, sandboxID, id)
}

// ReleaseIdempotencyKey: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, rec *model.IdempotencyRecord) error {
	return s.inner.ReleaseIdempotencyKey(ctx, rec)
}

// ReserveSandboxes: account (the account id argument must be the caller's).
func (s *Store) ReserveSandboxes(ctx context.Context, accountID string, since time.Time, now time.Time, check func(model.Usage) error, sbs []*model.Sandbox) error {
	if err := s.account(ctx, accountID); err != nil {
		return err
	}
	return s.inner.ReserveSandboxes(ctx, accountID, since, now, check, sbs)
}

// ReserveSnapshot: record (the record's account must be the caller's).
func (s *Store) ReserveSnapshot(ctx context.Context, sn *model.Snapshot, limit int) error {
	if err := s.account(ctx, sn.AccountID); err != nil {
		return err
	}
	return s.inner.ReserveSnapshot(ctx, sn, limit)
}

// RevokeAPIKey: account (the account id argument must be the caller's).
func (s *Store) RevokeAPIKey(ctx context.Context, accountID string, keyID string, t time.Time) error {
	if err := s.account(ctx, accountID); err != nil {
		return err
	}
	return s.inner.RevokeAPIKey(ctx, accountID, keyID, t)
}

// RevokedCredentials: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) RevokedCredentials(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	return s.inner.RevokedCredentials(ctx, ids, now)
}

// APIKeyRole: open (the role a takeover token's minting key acts with
// now, read at the token's use, before there is a caller).
func (s *Store) APIKeyRole(ctx context.Context, id string, now time.Time) (string, int64, error) {
	return s.inner.APIKeyRole(ctx, id, now)
}

// KeyDemotions: open (the server's check of the credentials in flight,
// which holds no account's data but counts).
func (s *Store) KeyDemotions(ctx context.Context, ids []string) (map[string]int64, error) {
	return s.inner.KeyDemotions(ctx, ids)
}

// SSHKeyByFingerprint: system (every account's records: the server's own work only).
func (s *Store) SSHKeyByFingerprint(ctx context.Context, fingerprint string) (*model.SSHKey, error) {
	if err := s.system(ctx); err != nil {
		return nil, err
	}
	return s.inner.SSHKeyByFingerprint(ctx, fingerprint)
}

// Sandbox: account (the account id argument must be the caller's).
func (s *Store) Sandbox(ctx context.Context, accountID string, id string) (*model.Sandbox, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.Sandbox(ctx, accountID, id)
}

// SandboxByID: result (the record found must be the caller's account's).
func (s *Store) SandboxByID(ctx context.Context, id string) (*model.Sandbox, error) {
	rec, err := s.inner.SandboxByID(ctx, id)
	if err == nil {
		err = s.account(ctx, rec.AccountID)
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// SandboxEgress: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) SandboxEgress(ctx context.Context, sandboxID string) ([]string, error) {
	return s.inner.SandboxEgress(ctx, sandboxID)
}

// SandboxImageID: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) SandboxImageID(ctx context.Context, sandboxID string) (string, error) {
	return s.inner.SandboxImageID(ctx, sandboxID)
}

// SandboxesWithStatus: system (every account's records: the server's own work only).
func (s *Store) SandboxesWithStatus(ctx context.Context, status string) ([]*model.Sandbox, error) {
	if err := s.system(ctx); err != nil {
		return nil, err
	}
	return s.inner.SandboxesWithStatus(ctx, status)
}

// SaveRecording: record (the record's account must be the caller's).
func (s *Store) SaveRecording(ctx context.Context, r *model.Recording) error {
	if err := s.account(ctx, r.AccountID); err != nil {
		return err
	}
	return s.inner.SaveRecording(ctx, r)
}

// SetAllowedCommands: account (the account id argument must be the caller's).
func (s *Store) SetAllowedCommands(ctx context.Context, accountID string, rules []api.CommandRule, t time.Time) error {
	if err := s.account(ctx, accountID); err != nil {
		return err
	}
	return s.inner.SetAllowedCommands(ctx, accountID, rules, t)
}

// SetKeepOutputSecrets: account (the account id argument must be the caller's).
func (s *Store) SetKeepOutputSecrets(ctx context.Context, accountID string, keep bool) error {
	if err := s.account(ctx, accountID); err != nil {
		return err
	}
	return s.inner.SetKeepOutputSecrets(ctx, accountID, keep)
}

// SetSandboxEgress: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) SetSandboxEgress(ctx context.Context, sandboxID string, grants []string) error {
	return s.inner.SetSandboxEgress(ctx, sandboxID, grants)
}

// Snapshot: account (the account id argument must be the caller's).
func (s *Store) Snapshot(ctx context.Context, accountID string, id string) (*model.Snapshot, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.Snapshot(ctx, accountID, id)
}

// ClaimSnapshotKey: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ClaimSnapshotKey(ctx context.Context, id, key string, now time.Time) error {
	return s.inner.ClaimSnapshotKey(ctx, id, key, now)
}

// BeginSnapshotDrop: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) BeginSnapshotDrop(ctx context.Context, key string, now, until time.Time) (bool, error) {
	return s.inner.BeginSnapshotDrop(ctx, key, now, until)
}

// TakeSandboxLease: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) TakeSandboxLease(ctx context.Context, id, owner string, now, until time.Time) (bool, error) {
	return s.inner.TakeSandboxLease(ctx, id, owner, now, until)
}

// ReleaseSandboxLease: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) ReleaseSandboxLease(ctx context.Context, id, owner string) error {
	return s.inner.ReleaseSandboxLease(ctx, id, owner)
}

// EndSnapshotDrop: scoped (keyed by a record the caller was checked for when it was loaded (a sandbox, an image build, an idempotency record of its credential)).
func (s *Store) EndSnapshotDrop(ctx context.Context, key string) error {
	return s.inner.EndSnapshotDrop(ctx, key)
}

// SnapshotsWithStatus: system (every account's records: the server's own work only).
func (s *Store) SnapshotsWithStatus(ctx context.Context, status string) ([]*model.Snapshot, error) {
	if err := s.system(ctx); err != nil {
		return nil, err
	}
	return s.inner.SnapshotsWithStatus(ctx, status)
}

// SpendToken: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) SpendToken(ctx context.Context, jti string, expires time.Time, now time.Time) (bool, error) {
	return s.inner.SpendToken(ctx, jti, expires, now)
}

// TouchAPIKey: open (needs no caller: authentication, signup and login run before there is one, or it holds no account's data).
func (s *Store) TouchAPIKey(ctx context.Context, keyID string, t time.Time) error {
	return s.inner.TouchAPIKey(ctx, keyID, t)
}

// UpdateSandbox: update (the record updated must be the caller's account's).
func (s *Store) UpdateSandbox(ctx context.Context, id string, fn func(*model.Sandbox) error) (*model.Sandbox, error) {
	return s.inner.UpdateSandbox(ctx, id, func(rec *model.Sandbox) error {
		if err := s.account(ctx, rec.AccountID); err != nil {
			return err
		}
		return fn(rec)
	})
}

// UpdateSnapshot: update (the record updated must be the caller's account's).
func (s *Store) UpdateSnapshot(ctx context.Context, id string, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	return s.inner.UpdateSnapshot(ctx, id, func(rec *model.Snapshot) error {
		if err := s.account(ctx, rec.AccountID); err != nil {
			return err
		}
		return fn(rec)
	})
}

// Usage: account (the account id argument must be the caller's).
func (s *Store) Usage(ctx context.Context, accountID string, since time.Time, now time.Time) (model.Usage, error) {
	if err := s.account(ctx, accountID); err != nil {
		return model.Usage{}, err
	}
	return s.inner.Usage(ctx, accountID, since, now)
}

// Volume: account (the account id argument must be the caller's).
func (s *Store) Volume(ctx context.Context, accountID string, id string) (*model.Volume, error) {
	if err := s.account(ctx, accountID); err != nil {
		return nil, err
	}
	return s.inner.Volume(ctx, accountID, id)
}
