package authz

import (
	"context"

	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// Caller is who a request acts for, once the guard authenticated it: the
// account, and the API key or takeover grant it came with (neither for an
// access token).
type Caller struct {
	Account *model.Account
	Key     *model.APIKey // the API key presented; nil otherwise
	Grant   *Grant        // set instead of Key for a takeover token
}

// AccountID is the caller's account, for the request log.
func (c *Caller) AccountID() string {
	if c == nil || c.Account == nil {
		return ""
	}
	return c.Account.ID
}

// From returns the request's caller: an empty Caller before the guard
// authenticated it, nil outside a request served by the control plane.
func From(ctx context.Context) *Caller {
	info := httpx.InfoFrom(ctx)
	if info == nil {
		return nil
	}
	c, _ := info.Caller.(*Caller)
	if c == nil {
		c = &Caller{}
		info.Caller = c
	}
	return c
}

// Account returns the authenticated account. Only handlers behind the
// guard (any credential kind but httpx.CredNone) may call it.
func Account(ctx context.Context) *model.Account { return From(ctx).Account }
