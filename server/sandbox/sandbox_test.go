package sandbox

import (
	"math"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestLimitsValidate: negative or NaN limits and an unknown size are
// refused; zero (no limit) and the sizes are taken.
func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Limits
		ok   bool
	}{
		{"none", Limits{}, true},
		{"all set", Limits{GlobalConcurrent: 5, AccountConcurrent: 2, MonthlySandboxHours: 10, MaxSize: api.SizeMedium}, true},
		{"negative global", Limits{GlobalConcurrent: -1}, false},
		{"negative account", Limits{AccountConcurrent: -1}, false},
		{"negative hours", Limits{MonthlySandboxHours: -1}, false},
		{"NaN hours", Limits{MonthlySandboxHours: math.NaN()}, false},
		{"unknown size", Limits{MaxSize: "huge"}, false},
	} {
		if err := tc.l.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestCheckLimitsOrder: the reference's order (a taken label, global
// capacity, the account's concurrency, monthly hours, size, storage), each
// with its code.
func TestCheckLimitsOrder(t *testing.T) {
	s := &Service{cfg: Config{MaxStorageGB: 20, Limits: Limits{GlobalConcurrent: 10, AccountConcurrent: 2, MonthlySandboxHours: 5, MaxSize: api.SizeSmall}}}
	full := model.Usage{ActiveLabels: map[string]bool{"web": true}, GlobalActive: 10, AccountActive: 2, MonthlyHours: 5}
	for _, tc := range []struct {
		name string
		p    createParams
		u    model.Usage
		code string
	}{
		{"label taken first", createParams{label: "web", size: api.SizeLarge, count: 1, storageGB: 50}, full, api.CodeConflict},
		{"then global", createParams{size: api.SizeLarge, count: 1, storageGB: 50}, full, api.CodeGlobalCapacityReached},
		{"then account", createParams{size: api.SizeLarge, count: 1, storageGB: 50}, model.Usage{AccountActive: 2, MonthlyHours: 5}, api.CodeConcurrentSandboxLimit},
		{"then hours", createParams{size: api.SizeLarge, count: 1, storageGB: 50}, model.Usage{MonthlyHours: 5}, api.CodeMonthlyUsageLimit},
		{"then size", createParams{size: api.SizeLarge, count: 1, storageGB: 50}, model.Usage{}, api.CodeSandboxSizeLimitReached},
		{"then storage", createParams{size: api.SizeSmall, count: 1, storageGB: 50}, model.Usage{}, api.CodeSandboxStorageLimitReached},
		{"fits", createParams{size: api.SizeSmall, count: 1, storageGB: 1}, model.Usage{}, ""},
	} {
		err := s.checkLimits(&model.Account{ID: "acct"}, tc.p, tc.u)
		code := ""
		if ae, ok := err.(*api.Error); ok {
			code = ae.Code
		} else if err != nil {
			t.Fatalf("%s: %v is not an *api.Error", tc.name, err)
		}
		if code != tc.code {
			t.Errorf("%s: code %q, want %q (%v)", tc.name, code, tc.code, err)
		}
	}
}
