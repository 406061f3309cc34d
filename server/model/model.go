package model

import (
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Account is one tenant. Every sandbox and key belongs to exactly one.
type Account struct {
	ID        string
	Email     string
	CreatedAt time.Time
	// KeepOutputSecrets turns off the scrubbing of secret-shaped strings
	// in the command output the API returns (server/scrub.go); the audit log is
	// scrubbed regardless. The zero value scrubs.
	KeepOutputSecrets bool
	// Org is set when the account is an organization (server/orgs): a
	// tenant people reach as members, with an API key the organization
	// issued to one of them. Loaded with the key that authenticates.
	Org *Org
}

// Org is what an organization's account carries beyond an account: its
// name and its quotas (0: the server's per-account limit).
type Org struct {
	Name                   string
	MaxConcurrentSandboxes int
	MonthlySandboxHours    float64
}

// TenantLimits lowers the server's per-account limits (0: none) to a's
// organization's quota where it sets a lower one; a personal account's
// are the server's.
func (a *Account) TenantLimits(concurrent int, hours float64) (int, float64) {
	if a == nil || a.Org == nil {
		return concurrent, hours
	}
	if q := a.Org.MaxConcurrentSandboxes; q > 0 && (concurrent == 0 || q < concurrent) {
		concurrent = q
	}
	if q := a.Org.MonthlySandboxHours; q > 0 && (hours == 0 || q < hours) {
		hours = q
	}
	return concurrent, hours
}

// OrgEmail is the email of an organization's account row: "org:" and its
// id, which is not an address, so no one can sign up or log in with it.
func OrgEmail(orgID string) string { return "org:" + orgID }

// API key roles. Member keys cannot take over a PTY or manage keys.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Organization roles (server/orgs). RoleAdmin and RoleMember are also
// organization roles, with their own meaning there.
const RoleOwner = "owner"

// EffectiveKeyRole combines an organization key's own role with its
// holder's role in the organization: the lesser of the two, where owner
// and admin of the organization allow an admin key and member a member
// key. An empty orgRole (the holder is no longer a member) allows nothing
// and answers "".
func EffectiveKeyRole(keyRole, orgRole string) string {
	switch orgRole {
	case RoleOwner, RoleAdmin:
		return keyRole
	case RoleMember:
		return RoleMember
	}
	return ""
}

// APIKey is a stored credential. The secret itself is never stored: only its
// SHA-256 (Hash) and a short display Prefix.
type APIKey struct {
	ID        string
	AccountID string
	Name      string
	Hash      string // lower-case hex SHA-256 of the whole key string
	Prefix    string // "bxk_live_" + the first 8 characters of the secret, for display
	Role      string // RoleAdmin or RoleMember
	// MemberID is the person who holds a key of an organization (its
	// AccountID); "" for a personal account's key.
	MemberID string
	// MemberRole is MemberID's role in the organization when the key was
	// loaded by APIKeyByHash: "" when they are no longer a member, and
	// then the key is refused.
	MemberRole string
	CreatedAt  time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
	// ExpiresAt is when the key stops working; nil: never.
	ExpiresAt *time.Time
	// Demotions counts the demotions of MemberID (owner or admin to
	// member) that lowered this admin key of an organization to a
	// member's. What the key held as an admin key (a takeover token it
	// minted, a request in flight) carries the count it had then and ends
	// when the count grows; it never goes down, so a promotion back does
	// not revive it.
	Demotions int64
}

// Expired reports whether the key has expired at now.
func (k *APIKey) Expired(now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// ToAPI is the key's wire form at now (whether it has expired); the
// secret is not part of it.
func (k *APIKey) ToAPI(now time.Time) api.APIKey {
	out := api.APIKey{
		ID: k.ID, Name: k.Name, Prefix: k.Prefix, Role: k.Role, CreatedAt: k.CreatedAt.UTC(), MemberID: k.MemberID,
		Expired: k.Expired(now),
	}
	if k.RevokedAt != nil {
		t := k.RevokedAt.UTC()
		out.RevokedAt = &t
	}
	if k.LastUsedAt != nil {
		t := k.LastUsedAt.UTC()
		out.LastUsedAt = &t
	}
	if k.ExpiresAt != nil {
		t := k.ExpiresAt.UTC()
		out.ExpiresAt = &t
	}
	return out
}

// StatusCreating is a sandbox row whose Driver.Create has not returned yet.
// It never reaches the API as a settled state: a failed create deletes the
// row, and a row still creating at start-up was interrupted by a crash.
const StatusCreating = "creating"

// Destroy reasons recorded in Sandbox.DestroyReason.
const (
	ReasonDeleted = "deleted" // DELETE /v1/sandboxes/{id}
	ReasonExpired = "expired" // the reaper, at expires_at
	ReasonLost    = "lost"    // the sidecar died, or was gone when the server started
)

// Sandbox is the control plane's record of one sandbox, including what the
// API never shows: the sidecar endpoint and its token.
type Sandbox struct {
	ID              string
	AccountID       string
	Label           string
	Size            string
	StorageGB       float64
	LifetimeMinutes int
	Status          string // StatusCreating, api.StatusActive, api.StatusPaused, api.StatusDestroyed, api.StatusLost
	DestroyReason   string
	CreatedAt       time.Time
	ExpiresAt       time.Time
	DestroyedAt     *time.Time
	Driver          string   // which driver created it, e.g. "local"
	Endpoint        Endpoint // set once Driver.Create returned
	// PausedWith is the pause mode of a paused sandbox (api.Pause*), and
	// PausedAt since when; PausedTotal is the time it spent paused
	// before, which monthly hours do not count (server/pause.go).
	PausedWith  string
	PausedAt    *time.Time
	PausedTotal time.Duration
	// PausedProcesses are the background processes that ran when it was
	// paused with api.PauseFilesystem, which resume restarts (those
	// started with restart) or reports as ended.
	PausedProcesses []api.ProcessInfo
	// AutoPause pauses the sandbox at ExpiresAt instead of destroying it
	// (api.CreateSandboxRequest.AutoPause).
	AutoPause bool
	// Destroying is the reason (ReasonDeleted, ReasonExpired) of a removal
	// under way: recorded before the driver tears the sandbox down, so a
	// start after a crash in between finishes it as destroyed rather than
	// lost, and calls to it are refused as to a destroyed one. Internal:
	// the wire status stays active or paused until the removal is
	// recorded.
	Destroying string
}

// Active reports whether operations on the sandbox are accepted.
func (sb *Sandbox) Active() bool { return sb.Status == api.StatusActive }

// Live reports whether the sandbox holds anything on its substrate:
// active, or paused.
func (sb *Sandbox) Live() bool { return sb.Status == api.StatusActive || sb.Status == api.StatusPaused }

// ToAPI converts the record to its wire form, dropping the endpoint and token.
func (sb *Sandbox) ToAPI() api.Sandbox {
	out := api.Sandbox{
		ID:              sb.ID,
		Status:          sb.Status,
		Label:           sb.Label,
		Size:            sb.Size,
		StorageGB:       sb.StorageGB,
		LifetimeMinutes: sb.LifetimeMinutes,
		CreatedAt:       sb.CreatedAt.UTC(),
		ExpiresAt:       sb.ExpiresAt.UTC(),
		DestroyReason:   sb.DestroyReason,
	}
	if sb.DestroyedAt != nil {
		t := sb.DestroyedAt.UTC()
		out.DestroyedAt = &t
	}
	if sb.PausedAt != nil {
		t := sb.PausedAt.UTC()
		out.PausedWith, out.PausedAt = sb.PausedWith, &t
	}
	out.AutoPause = sb.AutoPause
	return out
}

// Snapshot is the control plane's record of one snapshot of a sandbox's
// filesystem, including what the API never shows: where its data is in
// the driver's store, and what a restore needs of the sandbox it came from.
type Snapshot struct {
	ID        string
	AccountID string
	SandboxID string
	Label     string
	Status    string // api.SnapshotPending, api.SnapshotCompleted, api.SnapshotFailed
	Key       string // the driver's key for the data (SnapshotRef.Key); "" until completed
	SizeBytes int64
	Method    string // SnapshotRef.Method
	Driver    string // which driver stored it, e.g. "local"
	// Size, StorageGB and ImageID are the sandbox's, for a restore.
	Size      string
	StorageGB float64
	ImageID   string
	// Grants are the sandbox's grants when the snapshot was taken, which
	// a restore inherits; none for a snapshot taken before they were
	// recorded.
	Grants Grants
	// MountPoints are SnapshotRef.MountPoints, for a restore.
	MountPoints []string
	// Owner is the server instance that reserved the row (its heartbeat
	// in InstanceStore): while it is alive no other server fails the
	// snapshot pending. "" for rows made before owners were recorded.
	Owner string
	// OwnerToken is the token of Owner's heartbeat lease when it reserved
	// the row (InstanceStore): the owner completes the row only while its
	// lease runs under it (SnapshotStore.FinishSnapshot). 0 for a sole
	// server's rows (no heartbeat) and rows made before tokens.
	OwnerToken int64
	CreatedAt  time.Time
	DeletedAt  *time.Time
}

// Grants are what a sandbox was granted beyond its files, which its forks
// and restores inherit (docs/snapshots.md): secrets, each by the id of the
// secret its name meant when it was granted (a secret deleted and created
// again under the name is another, not granted by it), and egress
// ("host:port" each).
type Grants struct {
	Secrets []SecretGrant `json:"secrets,omitempty"`
	Egress  []string      `json:"egress,omitempty"`
}

// SecretGrant is one secret granted to a sandbox.
type SecretGrant struct {
	Name     string `json:"name"`
	SecretID string `json:"secret_id"`
}

// ToAPI converts the record to its wire form.
func (sn *Snapshot) ToAPI() api.Snapshot {
	out := api.Snapshot{
		ID: sn.ID, SessionID: sn.SandboxID, Label: sn.Label, Status: sn.Status,
		StorageKeyPrefix: "snapshots/" + sn.AccountID + "/" + sn.ID,
		SizeBytes:        sn.SizeBytes, CreatedAt: sn.CreatedAt.UTC(), Method: sn.Method,
	}
	if sn.DeletedAt != nil {
		t := sn.DeletedAt.UTC()
		out.DeletedAt = &t
	}
	return out
}
