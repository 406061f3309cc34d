package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
)

// Limits are the fair-use limits of sandbox creation (reference §3.4).
// Zero fields mean no limit. The storage and lifetime ceilings are
// Config.MaxStorageGB and Config.MaxLifetime.
type Limits struct {
	// GlobalConcurrent bounds the sandboxes being created or active on
	// this server (or every server sharing its database), all accounts
	// together.
	GlobalConcurrent int
	// AccountConcurrent bounds one account's sandboxes being created or active.
	AccountConcurrent int
	// MonthlySandboxHours bounds one account's sandbox-hours per calendar
	// month (UTC), counted over the sandboxes created in the month.
	MonthlySandboxHours float64
	// MaxSize is the largest size a create may ask for: small, medium or
	// large; "" allows any.
	MaxSize string
}

// Validate checks the limits are well-formed.
func (l Limits) Validate() error {
	switch {
	case l.GlobalConcurrent < 0 || l.AccountConcurrent < 0:
		return errors.New("concurrency limits must not be negative")
	case l.MonthlySandboxHours < 0 || math.IsNaN(l.MonthlySandboxHours):
		return errors.New("the monthly sandbox-hours limit must not be negative")
	case l.MaxSize != "" && limits.SizeRank(l.MaxSize) == 0:
		return fmt.Errorf("max size %q is not one of small, medium, large", l.MaxSize)
	}
	return nil
}

// checkLimits decides whether p may be created given u, in the reference's
// order: global capacity, the account's concurrency, its monthly hours,
// then the size and storage asked for.
func (s *Service) checkLimits(acct *model.Account, p createParams, u model.Usage) error {
	if p.label != "" && u.ActiveLabels[p.label] {
		// Checked here, in the store's critical section, so two creates
		// racing for one label cannot both win.
		e := api.Errorf(http.StatusConflict, api.CodeConflict, "an active sandbox is already labelled %q", p.label).
			WithHint("pick another label, or remove that sandbox first (`boxkite session rm " + p.label + "`)")
		e.Details = map[string]any{"label": p.label}
		return e
	}
	l := tenantLimits(s.cfg.Limits, acct) // an organization's quota (tenantLimits)
	if l.GlobalConcurrent > 0 && u.GlobalActive+p.count > l.GlobalConcurrent {
		return limits.LimitError(api.CodeGlobalCapacityReached,
			fmt.Sprintf("the server is at capacity: %d of %d sandboxes are running", u.GlobalActive, l.GlobalConcurrent),
			"try again in a few minutes",
			map[string]any{"limit": l.GlobalConcurrent, "active": u.GlobalActive})
	}
	if l.AccountConcurrent > 0 && u.AccountActive+p.count > l.AccountConcurrent {
		return limits.LimitError(api.CodeConcurrentSandboxLimit,
			fmt.Sprintf("%d of your sandboxes are running; at most %d may run at once", u.AccountActive, l.AccountConcurrent),
			"remove one with `boxkite session rm`, or wait for one to expire",
			map[string]any{"limit": l.AccountConcurrent, "active": u.AccountActive, "requested": p.count})
	}
	if l.MonthlySandboxHours > 0 && u.MonthlyHours >= l.MonthlySandboxHours {
		return limits.LimitError(api.CodeMonthlyUsageLimit,
			fmt.Sprintf("this month's sandbox time is used up: %.2f of %g hours", u.MonthlyHours, l.MonthlySandboxHours),
			"the count starts again on the 1st (UTC); `boxkite whoami` shows it",
			map[string]any{"limit_hours": l.MonthlySandboxHours, "used_hours": limits.RoundHours(u.MonthlyHours)})
	}
	if l.MaxSize != "" && limits.SizeRank(p.size) > limits.SizeRank(l.MaxSize) {
		return limits.LimitError(api.CodeSandboxSizeLimitReached,
			fmt.Sprintf("size %s is larger than the largest allowed, %s", p.size, l.MaxSize),
			"ask for --size "+l.MaxSize+" or smaller",
			map[string]any{"requested_size": p.size, "max_size": l.MaxSize})
	}
	if p.storageGB > s.cfg.MaxStorageGB {
		return limits.LimitError(api.CodeSandboxStorageLimitReached,
			fmt.Sprintf("storage_gb %g is more than the most allowed, %g", p.storageGB, s.cfg.MaxStorageGB),
			fmt.Sprintf("ask for at most %g GB", s.cfg.MaxStorageGB),
			map[string]any{"requested_storage_gb": p.storageGB, "max_storage_gb": s.cfg.MaxStorageGB})
	}
	return nil
}

// reserveSandboxes checks the limits and records sbs as being created in
// one critical section (QuotaStore.ReserveSandboxes), so concurrent
// creates cannot both pass a check only one of them fits under.
func (s *Service) reserveSandboxes(ctx context.Context, acct *model.Account, p createParams, sbs []*model.Sandbox) error {
	now := s.now()
	err := s.store.ReserveSandboxes(ctx, acct.ID, s.hoursSince(acct, now), now, func(u model.Usage) error { return s.checkLimits(acct, p, u) }, sbs)
	if _, ok := errors.AsType[*api.Error](err); ok {
		return err
	}
	if model.IsStorageFault(err) {
		return model.StorageFailed("record the sandbox")
	}
	if errors.Is(err, model.ErrStoreReadOnly) || errors.Is(err, model.ErrStoreIO) {
		return api.Errorf(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "could not record the sandbox: %s", audit.Reason(err)).
			WithHint("the operator must make the database writable again; the server log has the cause")
	}
	if err != nil {
		return fmt.Errorf("record sandbox: %w", err)
	}
	return nil
}

// hoursSince is where the sandbox-hours checkLimits compares with acct's
// monthly limit start counting: the month's start, or zero when no
// monthly limit applies, so that the store does not sum them (model.
// QuotaStore: the sum reads every sandbox the account created this month,
// twice per create).
func (s *Service) hoursSince(acct *model.Account, now time.Time) time.Time {
	if tenantLimits(s.cfg.Limits, acct).MonthlySandboxHours > 0 {
		return limits.MonthStart(now)
	}
	return time.Time{}
}

// tenantLimits are the limits of acct's sandboxes: the server's, lowered
// by an organization's own quota where it sets one.
func tenantLimits(l Limits, acct *model.Account) Limits {
	l.AccountConcurrent, l.MonthlySandboxHours = acct.TenantLimits(l.AccountConcurrent, l.MonthlySandboxHours)
	return l
}
