package authz

import (
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Grant is who takes over a sandbox's terminal, and how: an admin API
// key in the Authorization header, or a single-use takeover token minted
// by an admin key or, through the SSH bastion, for a registered SSH key.
type Grant struct {
	KeyID, KeyName string
	// KeyExpiresAt is when the API key behind the grant expires, which
	// ends what the grant holds as its revocation would; nil: never, or
	// an SSH key.
	KeyExpiresAt *time.Time
	// KeyDemotions is the API key's count of demotions
	// (model.APIKey.Demotions) when the grant was made: the grant ends
	// when the count grows, as at a revocation.
	KeyDemotions int64
	Via          string // ViaAPIKey or ViaSSHKey
	ReadOnly     bool
	Token        bool // presented as a takeover token
}

// Detail is the grant as the audit log shows it.
func (g Grant) Detail() map[string]any {
	d := map[string]any{"read_only": g.ReadOnly, "via": g.Via, "token": g.Token}
	if g.Via == ViaSSHKey {
		d["ssh_key_id"], d["ssh_key_name"] = g.KeyID, g.KeyName
	} else {
		d["api_key_id"], d["api_key_name"] = g.KeyID, g.KeyName
	}
	return d
}

// Ways a takeover grant was obtained, in its audit detail ("via").
const (
	ViaAPIKey = "api_key" // an admin key, in the header or behind a minted token
	ViaSSHKey = "ssh_key" // a registered SSH key, through the bastion
)

// ErrReadOnlyExec refuses a command to a read-only takeover grant.
var ErrReadOnlyExec = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeTakeoverNotPermitted,
	Message: "a read-only takeover token cannot run commands",
	Hint:    "mint a token without read_only to run commands",
}
