package model

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// ErrNotFound is returned by Store methods when the record does not exist
// or, for account-scoped lookups, belongs to another account.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a record with the same unique value exists.
var ErrConflict = errors.New("conflict")

// ErrSnapshotKeyDropping is SnapshotStore.ClaimSnapshotKey's answer while
// the data under the key is being deleted.
var ErrSnapshotKeyDropping = errors.New("the snapshot key's data is being deleted")

// ErrOwnerLeaseLost is SnapshotStore.FinishSnapshot's refusal: the lease
// under which the snapshot's owner reserved it (Snapshot.OwnerToken) is
// no longer its live lease.
var ErrOwnerLeaseLost = errors.New("the snapshot's server lost the heartbeat lease it reserved the snapshot under")

// VolumeInUseError is DeleteVolume's refusal: the sandboxes (ids) that
// mount the volume. It is ErrConflict to errors.Is.
type VolumeInUseError struct {
	SandboxIDs []string
}

func (e *VolumeInUseError) Error() string {
	return "volume mounted by sandboxes " + strings.Join(e.SandboxIDs, ", ")
}

// Is makes the error ErrConflict.
func (e *VolumeInUseError) Is(target error) bool { return target == ErrConflict }

// Errors a store wraps when it cannot commit a write because of the
// database itself, not the request: the server then fails closed on
// audited work (server/auditgate.go) and says which in /health/ready.
var (
	ErrStoreReadOnly = errors.New("the database is read-only")
	ErrStoreFull     = errors.New("the database's disk is full")
	ErrStoreIO       = errors.New("the database cannot write to its disk")
)

// A Store persists accounts, keys and sandbox records. server/sqlstore
// implements it for SQLite (and later Postgres). It is split by concern so
// that later issues (quotas, audit, secrets) add interfaces rather than grow
// one; a deployment may back each with a different implementation.
type Store interface {
	AccountStore
	SandboxStore
	AuditStore
	CredentialStore
	SSHKeyStore
	QuotaStore
	IdempotencyStore
	AllowlistStore
	VolumeStore
	MCPConnectionStore
	RecordingStore
	TokenStore
	EgressStore
	SnapshotStore
	InstanceStore
	// Ping reports whether the store answers, for /health/ready.
	Ping(ctx context.Context) error
	// Close releases the store.
	Close() error
}

// AccountStore holds accounts and their API keys.
type AccountStore interface {
	// APIKeyByHash returns the key with the given hash and its account.
	// Revoked keys are returned too; the caller decides. ErrNotFound if none.
	APIKeyByHash(ctx context.Context, hash string) (*APIKey, *Account, error)
	// CreateAccount inserts a; ErrConflict if the email is taken.
	CreateAccount(ctx context.Context, a *Account) error
	// AccountByEmail returns the account with that email, or ErrNotFound.
	AccountByEmail(ctx context.Context, email string) (*Account, error)
	// CreateAPIKey inserts k; ErrConflict if the hash exists.
	CreateAPIKey(ctx context.Context, k *APIKey) error
	// EnsureAccountKey makes sure an account with a.Email exists (inserting
	// a if not) and that k is registered for it, in one transaction. It is
	// idempotent. It returns the stored account and key, which may be older
	// records than a and k. A key hash registered to another account is ErrConflict.
	EnsureAccountKey(ctx context.Context, a *Account, k *APIKey) (*Account, *APIKey, error)
	// RevokeAPIKey marks the key revoked at t; ErrNotFound if it is not the account's.
	RevokeAPIKey(ctx context.Context, accountID, keyID string, t time.Time) error
	// TouchAPIKey records a use of the key at t.
	TouchAPIKey(ctx context.Context, keyID string, t time.Time) error
}

// SandboxStore holds sandbox records.
type SandboxStore interface {
	// CreateSandbox inserts sb; ErrConflict if the id exists.
	CreateSandbox(ctx context.Context, sb *Sandbox) error
	// Sandbox returns the account's sandbox, or ErrNotFound (also for another account's).
	Sandbox(ctx context.Context, accountID, id string) (*Sandbox, error)
	// SandboxByID returns any account's sandbox, or ErrNotFound: for what
	// the server records about a sandbox on its own (lost, frozen).
	SandboxByID(ctx context.Context, id string) (*Sandbox, error)
	// ListSandboxes returns the account's sandboxes newest first, all or
	// only the live ones (active or paused). Rows still being created are
	// left out.
	ListSandboxes(ctx context.Context, accountID string, activeOnly bool) ([]*Sandbox, error)
	// ListSandboxPage returns one page of ListSandboxes's list, in the
	// same order (created_at, then id, both descending): the rows after
	// p's cursor, at most p.Limit of them. A row created while a client
	// pages is newer than its cursor, so pages neither skip nor repeat.
	ListSandboxPage(ctx context.Context, accountID string, p SandboxPage) ([]*Sandbox, error)
	// SandboxesWithStatus returns every account's sandboxes in one status,
	// for reconciliation at start-up.
	SandboxesWithStatus(ctx context.Context, status string) ([]*Sandbox, error)
	// ExpiredSandboxes returns active sandboxes whose expires_at is at or before t.
	ExpiredSandboxes(ctx context.Context, t time.Time) ([]*Sandbox, error)
	// UpdateSandbox loads the sandbox, calls fn on it and writes the result,
	// all in one transaction; fn's error aborts the update and is returned.
	// fn must not write to the store: on SQLite its write would wait for
	// the turn this transaction holds. fn may run more than once (each time
	// on a fresh load): on SQLite a batch of writes whose commit failed
	// for one write's reason runs the others again.
	UpdateSandbox(ctx context.Context, id string, fn func(*Sandbox) error) (*Sandbox, error)
	// DeleteSandbox removes the row, for a create that failed; ErrNotFound if none.
	DeleteSandbox(ctx context.Context, id string) error
	// CountActiveSandboxes counts the account's active sandboxes; "" counts all accounts.
	CountActiveSandboxes(ctx context.Context, accountID string) (int, error)
	// TakeSandboxLease takes the lifecycle lease on sandbox id's row for
	// owner (a server's instance id) until until, and reports whether it
	// did: it does when no owner holds it, when owner does (a renewal),
	// or when the holder's lease ended before now (a server that died
	// holding it). ErrNotFound when there is no such row. Servers sharing
	// the database order the pauses, resumes, removals and snapshot copies
	// of one sandbox with it (server/sandbox, lease.go).
	TakeSandboxLease(ctx context.Context, id, owner string, now, until time.Time) (bool, error)
	// ReleaseSandboxLease ends owner's lease on sandbox id's row; nothing
	// when another owner holds it (owner's ended and was taken).
	ReleaseSandboxLease(ctx context.Context, id, owner string) error
}

// AuditStore holds the audit log: per sandbox, a hash chain of
// ExecLogEntry. Entries are only ever appended.
type AuditStore interface {
	// AppendExecLog gives e the next Seq of its sandbox, seals it after the
	// sandbox's last entry (ExecLogEntry.Seal) and inserts it, in one
	// transaction (which may hold other appends too: a group commit);
	// appends to one sandbox are serialised, so the chain never forks. It
	// returns nil only once e is committed.
	AppendExecLog(ctx context.Context, e *ExecLogEntry) error
	// ExecLog returns at most limit of the sandbox's entries in Seq order,
	// skipping the first offset, and how many it has in all.
	ExecLog(ctx context.Context, sandboxID string, limit, offset int) ([]*ExecLogEntry, int, error)
	// ExecLogHead returns where the sandbox's chain ended at its last
	// append, as recorded with it: Seq 0 and api.GenesisHash before any.
	ExecLogHead(ctx context.Context, sandboxID string) (ExecLogHead, error)
	// ExecLogAfter returns at most limit of the sandbox's entries whose Seq
	// is greater than afterSeq, in Seq order (live watchers catching up).
	ExecLogAfter(ctx context.Context, sandboxID string, afterSeq int64, limit int) ([]*ExecLogEntry, error)
	// ExecLogSeq returns the Seq of the sandbox's entry entryID, or
	// ErrNotFound (watchers resuming from Last-Event-ID).
	ExecLogSeq(ctx context.Context, sandboxID, entryID string) (int64, error)
}

// Storage of the multi-tenant control plane (issue 5): passwords, key
// listings, SSH keys, settings, quota reservations and idempotency
// records. Each concern is its own interface; Store embeds them all.

// CredentialStore holds what signup, login and key management need beyond
// AccountStore.
type CredentialStore interface {
	// AccountByID returns the account, or ErrNotFound.
	AccountByID(ctx context.Context, id string) (*Account, error)
	// RevokedCredentials returns those of ids (API key or SSH key ids)
	// that are not valid credentials at now: revoked, expired (at or past
	// their ExpiresAt) or unknown API keys, deleted SSH keys.
	RevokedCredentials(ctx context.Context, ids []string, now time.Time) ([]string, error)
	// APIKeyRole returns the role API key id acts with at now, its own or
	// for an organization's key the lesser of its own and its holder's
	// current role there (EffectiveKeyRole), and its APIKey.Demotions;
	// role "" when the key is revoked, expired or unknown, or its holder
	// is no longer a member. A takeover token's use reads it.
	APIKeyRole(ctx context.Context, id string, now time.Time) (role string, demotions int64, err error)
	// KeyDemotions returns APIKey.Demotions of those of ids (credential
	// ids: API keys, SSH keys) that were ever demoted; the others are left
	// out.
	KeyDemotions(ctx context.Context, ids []string) (map[string]int64, error)
	// SetKeepOutputSecrets sets the account's Account.KeepOutputSecrets;
	// ErrNotFound if there is no such account.
	SetKeepOutputSecrets(ctx context.Context, accountID string, keep bool) error
	// CreateAccountWithPassword inserts a with its password hash (see
	// HashPassword); ErrConflict if the email is taken.
	CreateAccountWithPassword(ctx context.Context, a *Account, passwordHash string) error
	// PasswordHash returns the account with that email and its password
	// hash, "" when it has none (the local bootstrap account). ErrNotFound if none.
	PasswordHash(ctx context.Context, email string) (*Account, string, error)
	// ListAPIKeys returns the account's keys, revoked ones included, newest first.
	ListAPIKeys(ctx context.Context, accountID string) ([]*APIKey, error)
	// EnsureSetting stores value under name unless a value is there
	// already, and returns the stored value. Concurrent callers all get
	// the one value that won.
	EnsureSetting(ctx context.Context, name, value string) (string, error)
}

// SSHKey is a public key an account registered for the SSH bastion.
type SSHKey struct {
	ID          string
	AccountID   string
	Name        string
	PublicKey   string // "type base64", as ssh.MarshalAuthorizedKey without the newline
	Fingerprint string // SHA256:…, unique across all accounts
	CreatedAt   time.Time
	// MemberID is the member who registered a key of an organization
	// (with a key of it); "" for a personal account's. Removing the
	// member removes the key.
	MemberID string
}

// SSHKeyStore holds the accounts' SSH public keys.
type SSHKeyStore interface {
	// CreateSSHKey inserts k; ErrConflict if its fingerprint is registered
	// (by any account: the bastion maps a key to one account).
	CreateSSHKey(ctx context.Context, k *SSHKey) error
	// ListSSHKeys returns the account's keys, oldest first.
	ListSSHKeys(ctx context.Context, accountID string) ([]*SSHKey, error)
	// DeleteSSHKey removes the account's key; ErrNotFound if it is not the account's.
	DeleteSSHKey(ctx context.Context, accountID, id string) error
	// SSHKeyByFingerprint returns the key with that SHA256 fingerprint,
	// whichever account it belongs to, or ErrNotFound.
	SSHKeyByFingerprint(ctx context.Context, fingerprint string) (*SSHKey, error)
}

// Usage is what counts against fair-use limits at one moment.
type Usage struct {
	GlobalActive  int     // sandboxes being created or active, all accounts
	AccountActive int     // the account's sandboxes being created or active
	MonthlyHours  float64 // the account's sandbox-hours of sandboxes created since the month began
	// ActiveLabels are the labels of the account's sandboxes being created
	// or active (nil when none has one): a label names one sandbox.
	ActiveLabels map[string]bool
}

// QuotaStore checks limits and records new sandboxes atomically.
type QuotaStore interface {
	// ReserveSandboxes computes the account's Usage (monthly hours counted
	// from since up to now; none, MonthlyHours 0, when since is zero: the
	// sum reads every sandbox created since), calls check with it and, if check returns
	// nil, inserts sbs (status StatusCreating), all in one critical
	// section: no other ReserveSandboxes on the same database (from this
	// process or another) runs between the count and the insert. check's
	// error is returned as is.
	ReserveSandboxes(ctx context.Context, accountID string, since, now time.Time, check func(Usage) error, sbs []*Sandbox) error
	// Usage computes the account's Usage as ReserveSandboxes does, outside
	// any critical section.
	Usage(ctx context.Context, accountID string, since, now time.Time) (Usage, error)
}

// Idempotency record states.
const (
	IdempotencyInProgress = "in_progress"
	IdempotencyCompleted  = "completed"
)

// IdempotencyRecord is one Idempotency-Key of one credential on one route,
// and, once the request completed, the answer to replay.
type IdempotencyRecord struct {
	Credential  string // "key:<api key id>" or "account:<account id>" (access tokens)
	Method      string
	Path        string
	Key         string // the Idempotency-Key header
	RequestHash string // hex SHA-256 of the request body
	State       string // IdempotencyInProgress or IdempotencyCompleted
	Status      int    // the answer's HTTP status, once completed
	ContentType string
	Body        []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// IdempotencyStore keeps Idempotency-Key records across restarts.
type IdempotencyStore interface {
	// ClaimIdempotencyKey inserts rec (in progress) and returns nil, nil
	// if no live record has its credential, method, path and key;
	// otherwise it returns that record and inserts nothing. A record is
	// dead once expired (ExpiresAt at or before rec.CreatedAt) or, when in
	// progress, if it was created before staleBefore (its server died).
	ClaimIdempotencyKey(ctx context.Context, rec *IdempotencyRecord, staleBefore time.Time) (*IdempotencyRecord, error)
	// CompleteIdempotencyKey stores rec's answer and marks it completed.
	CompleteIdempotencyKey(ctx context.Context, rec *IdempotencyRecord) error
	// ReleaseIdempotencyKey deletes rec's in-progress record, so the key
	// may be used again (after a 5xx, or an answer too large to keep).
	ReleaseIdempotencyKey(ctx context.Context, rec *IdempotencyRecord) error
	// PurgeIdempotencyKeys deletes records that expired at or before t.
	PurgeIdempotencyKeys(ctx context.Context, t time.Time) error
}

// AllowlistStore holds each account's command allowlist.
type AllowlistStore interface {
	// AllowedCommands returns the account's rules; none (nil) when it has no allowlist.
	AllowedCommands(ctx context.Context, accountID string) ([]api.CommandRule, error)
	// SetAllowedCommands replaces the account's rules at t; nil or empty removes the allowlist.
	SetAllowedCommands(ctx context.Context, accountID string, rules []api.CommandRule, t time.Time) error
}

// Volume is the control plane's record of a persistent volume.
type Volume struct {
	ID        string
	AccountID string
	Label     string
	SizeGB    float64
	Status    string // api.VolumeReady
	CreatedAt time.Time
}

// ToAPI converts the record to its wire form.
func (v *Volume) ToAPI() api.Volume {
	return api.Volume{ID: v.ID, Label: v.Label, SizeGB: v.SizeGB, Status: v.Status, CreatedAt: v.CreatedAt.UTC()}
}

// VolumeStore holds volume records and which sandboxes mount them.
type VolumeStore interface {
	// CreateVolume inserts v; ErrConflict if the id exists.
	CreateVolume(ctx context.Context, v *Volume) error
	// Volume returns the account's volume, or ErrNotFound (also for another account's).
	Volume(ctx context.Context, accountID, id string) (*Volume, error)
	// ListVolumes returns the account's volumes, newest first.
	ListVolumes(ctx context.Context, accountID string) ([]*Volume, error)
	// DeleteVolume removes the account's volume unless a sandbox that is
	// creating or active mounts it (a *VolumeInUseError, which is
	// ErrConflict, naming them), in one transaction;
	// ErrNotFound if it is not the account's.
	DeleteVolume(ctx context.Context, accountID, id string) error
	// AttachVolumes records that the sandbox mounts the volumes.
	AttachVolumes(ctx context.Context, sandboxID string, volumeIDs []string) error
}

// MCPConnection is the record of a named egress grant to a catalog host.
type MCPConnection struct {
	ID        string
	AccountID string
	Label     string
	CatalogID string
	Host      string // host or host:port, from the catalog when it was made
	CreatedAt time.Time
}

// ToAPI converts the record to its wire form.
func (c *MCPConnection) ToAPI() api.MCPConnection {
	return api.MCPConnection{ID: c.ID, Label: c.Label, CatalogID: c.CatalogID, Host: c.Host, CreatedAt: c.CreatedAt.UTC()}
}

// MCPConnectionStore holds MCP connections.
type MCPConnectionStore interface {
	// CreateMCPConnection inserts c; ErrConflict if the account has the label.
	CreateMCPConnection(ctx context.Context, c *MCPConnection) error
	// MCPConnections returns the account's connections, newest first.
	MCPConnections(ctx context.Context, accountID string) ([]*MCPConnection, error)
	// DeleteMCPConnection removes the account's connection, or ErrNotFound.
	DeleteMCPConnection(ctx context.Context, accountID, id string) error
}

// Recording is one takeover's asciicast v2 recording.
type Recording struct {
	ID        string
	SandboxID string
	AccountID string
	Data      []byte // asciicast v2: a JSON header line, then one JSON event per line
	Truncated bool
	CreatedAt time.Time
}

// RecordingStore keeps takeover recordings.
type RecordingStore interface {
	// SaveRecording inserts r.
	SaveRecording(ctx context.Context, r *Recording) error
	// Recording returns the account's recording id of sandbox sandboxID,
	// or ErrNotFound.
	Recording(ctx context.Context, accountID, sandboxID, id string) (*Recording, error)
}

// TokenStore remembers single-use tokens that were spent, so a takeover
// token opens one terminal even when several servers share the database.
type TokenStore interface {
	// SpendToken records jti as spent until expires and reports whether
	// it was unspent. Entries that expired before now may be forgotten
	// (the server's clock decides, not the database's).
	SpendToken(ctx context.Context, jti string, expires, now time.Time) (bool, error)
}

// EgressStore keeps each sandbox's egress grants, so a restarted server
// can serve the egress socket of a sandbox it adopts.
type EgressStore interface {
	// SetSandboxEgress records the sandbox's grants ("host:port" each).
	SetSandboxEgress(ctx context.Context, sandboxID string, grants []string) error
	// SandboxEgress returns them; none for a sandbox without egress.
	SandboxEgress(ctx context.Context, sandboxID string) ([]string, error)
}

// AuditListener is implemented by stores that several servers share. It
// blocks until ctx is done or the connection fails, calling notify for
// every entry appended by any server (this one included) and connected
// each time it starts listening (notices sent while it was not listening
// are lost, so watchers must then look at the store). A store that is
// not shared returns nil at once.
type AuditListener interface {
	ListenAudit(ctx context.Context, notify func(sandboxID, entryID string), connected func()) error
}

// Revocation is a notice that what a credential holds ends: it was
// revoked (an API key) or deleted (an SSH key), or, Demotions > 0, an
// organization's admin key was lowered to a member's by its holder's
// demotion and Demotions is its APIKey.Demotions now.
type Revocation struct {
	CredentialID string
	Demotions    int64
}

// RevocationListener is implemented by stores several servers share. It
// blocks until ctx is done or the connection fails, calling notify for
// every credential (API key or SSH key) revoked, and every admin key
// demoted, by any server, and connected each time it starts listening
// (notices sent while it was not listening are lost: the server then asks
// the store).
type RevocationListener interface {
	ListenRevocations(ctx context.Context, notify func(Revocation), connected func()) error
}

// SnapshotStore holds snapshot records (issue 22). A deleted snapshot
// keeps its row (deleted_at set) and is found by none of these.
type SnapshotStore interface {
	// ReserveSnapshot inserts sn unless the account already holds limit
	// snapshots (pending or completed), in one critical section; it then
	// returns a *SnapshotLimitError. limit ≤ 0 means no limit.
	ReserveSnapshot(ctx context.Context, sn *Snapshot, limit int) error
	// Snapshot returns the account's snapshot, or ErrNotFound (also for
	// another account's, and for a deleted one).
	Snapshot(ctx context.Context, accountID, id string) (*Snapshot, error)
	// ListSnapshots returns the account's snapshots newest first: of one
	// sandbox, or all when sandboxID is "".
	ListSnapshots(ctx context.Context, accountID, sandboxID string) ([]*Snapshot, error)
	// UpdateSnapshot loads the snapshot, calls fn and writes the result
	// in one transaction; fn's error aborts and is returned. fn must not
	// write to the store (see UpdateSandbox).
	UpdateSnapshot(ctx context.Context, id string, fn func(*Snapshot) error) (*Snapshot, error)
	// FinishSnapshot is UpdateSnapshot for the owner's finishing write,
	// fenced by its lease: when the row has an OwnerToken and its owner's
	// heartbeat (InstanceStore) no longer runs past now under that token
	// (it lapsed, and was or will be taken up again under a new one), it
	// returns ErrOwnerLeaseLost without calling fn. The check and the
	// write are one transaction with the row locked, so no other server
	// fails the row between them.
	FinishSnapshot(ctx context.Context, id string, now time.Time, fn func(*Snapshot) error) (*Snapshot, error)
	// SnapshotsWithStatus returns every account's snapshots in one
	// status, for reconciliation at start-up.
	SnapshotsWithStatus(ctx context.Context, status string) ([]*Snapshot, error)
	// ClaimSnapshotKey records key as pending snapshot id's before the
	// driver keeps data stored under it or writes its own there (keys are
	// content addresses, so snapshots may share one): once it returns, a
	// drop of key on any server sharing the store finds key in use. While
	// a drop of key is under way (BeginSnapshotDrop, its lease not past
	// at now) it returns ErrSnapshotKeyDropping: try again once the drop
	// ended, and write the data anew. ErrNotFound when id is not pending.
	ClaimSnapshotKey(ctx context.Context, id, key string, now time.Time) error
	// BeginSnapshotDrop reports whether the data under key may be
	// deleted: no snapshot that is not deleted holds key (pending ones
	// that claimed it included) and no other drop of key is under way at
	// now. When it may, the drop is recorded, leased until until, in the
	// same critical section: claims of key wait for EndSnapshotDrop (or
	// the lease's end, for a server that died meanwhile).
	BeginSnapshotDrop(ctx context.Context, key string, now, until time.Time) (bool, error)
	// EndSnapshotDrop ends the drop of key BeginSnapshotDrop began.
	EndSnapshotDrop(ctx context.Context, key string) error
	// SandboxImageID returns the image a sandbox was created from, "" for
	// none.
	SandboxImageID(ctx context.Context, sandboxID string) (string, error)
}

// InstanceStore holds the heartbeats of the servers sharing the store
// (session 24): each server instance keeps its row alive while it runs,
// so another can tell a pending snapshot a live server is taking
// (Snapshot.Owner) from one a crash left. alive_until is by the writing
// server's clock (as the lifecycle lease's): the servers' clocks must
// agree to well within a heartbeat's lease.
//
// Each heartbeat is a lease with a fencing token (session 25): a number
// that stays the same while the lease is renewed before it ends, and
// grows whenever it is taken again after it ended (or after its row was
// removed), since other servers may meanwhile have taken the instance
// for dead and failed its pending snapshots. A snapshot records the
// token it was reserved under (Snapshot.OwnerToken), and its owner's
// finishing write holds only under that token (FinishSnapshot).
type InstanceStore interface {
	// BeatInstance records that server instance id is alive until until
	// and returns its lease's token: token (the one the instance last
	// got; 0 at its start) when its lease still runs past now under it,
	// else a greater one (the lease taken again).
	BeatInstance(ctx context.Context, id string, token int64, now, until time.Time) (int64, error)
	// EndInstance removes instance id's heartbeat (a clean shutdown).
	EndInstance(ctx context.Context, id string) error
	// LiveInstances returns the instances whose heartbeat runs past now,
	// each with its lease's token.
	LiveInstances(ctx context.Context, now time.Time) (map[string]int64, error)
	// ForgetInstances removes the heartbeats that ended before before
	// (servers that died without EndInstance).
	ForgetInstances(ctx context.Context, before time.Time) error
}

// SnapshotLimitError is ReserveSnapshot's refusal.
type SnapshotLimitError struct{ Limit, Count int }

func (e *SnapshotLimitError) Error() string {
	return fmt.Sprintf("the account holds %d snapshots, the most it may", e.Count)
}
