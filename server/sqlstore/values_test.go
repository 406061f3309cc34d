package sqlstore_test

import (
	"math"
	"testing"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/orgs"
)

// testRefusedValues: what the database cannot store comes back as an
// error the control plane answers as the client's 422
// (model.RefusedValue), never as an unexplained failure: a NUL in text on
// PostgreSQL (SQLite keeps it), and on both an organization's quota past an
// INTEGER column, which pgx refuses to encode with no SQLSTATE at all.
func testRefusedValues(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	shared := st.(interface{ Shared() bool }).Shared() // PostgreSQL
	err := st.CreateVolume(ctx, &model.Volume{ID: model.NewID(), AccountID: a.ID, Label: "a\x00b", SizeGB: 1, Status: "ready", CreatedAt: base})
	if refused := model.RefusedValue(err) != nil; refused != shared || shared && err == nil {
		t.Errorf("a label with NUL: %v (refused value: %v), want it refused on PostgreSQL only", err, refused)
	}
	os := st.(orgs.Store)
	o := &orgs.Org{ID: model.NewID(), Name: "acme", CreatedAt: base}
	if err := os.CreateOrg(ctx, o, a.ID); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{math.MaxInt32 + 1, math.MinInt32 - 1} {
		o.Quota.MaxConcurrentSandboxes = n
		if err := os.UpdateOrg(ctx, o); model.RefusedValue(err) == nil {
			t.Errorf("UpdateOrg with max_concurrent_sandboxes %d: %v, want a refused value", n, err)
		}
		if err := os.CreateOrg(ctx, &orgs.Org{ID: model.NewID(), Name: "big", CreatedAt: base, Quota: o.Quota}, a.ID); model.RefusedValue(err) == nil {
			t.Errorf("CreateOrg with max_concurrent_sandboxes %d: %v, want a refused value", n, err)
		}
	}
	o.Quota.MaxConcurrentSandboxes = math.MaxInt32
	if err := os.UpdateOrg(ctx, o); err != nil {
		t.Errorf("UpdateOrg with the most an INTEGER holds: %v", err)
	}
}
