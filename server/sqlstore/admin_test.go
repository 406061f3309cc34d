package sqlstore_test

import (
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/admin"
	"github.com/boxkite/boxkite/server/model"
)

// testAdmin: usage across accounts, busiest first; the access log,
// newest first.
func testAdmin(t *testing.T, newStore storeFactory) {
	ms := newStore(t)(t)
	st := ms.(admin.Store)
	ctx := t.Context()
	a, b := mustAccount(t, ms, "a@example.com"), mustAccount(t, ms, "b@example.com")
	for i, acct := range []*model.Account{b, b, a} {
		sb := &model.Sandbox{ID: model.NewID(), AccountID: acct.ID, Status: api.StatusActive, CreatedAt: base.Add(time.Duration(i) * time.Hour), ExpiresAt: base.Add(48 * time.Hour)}
		if err := ms.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	u, err := st.AdminUsage(ctx, base.Add(-time.Hour), base.Add(3*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalAccounts != 2 || u.GlobalActive != 3 || len(u.Accounts) != 2 || u.Accounts[0].AccountID != b.ID || u.Accounts[0].Active != 2 ||
		u.Accounts[0].Hours != 5 || u.Accounts[1].Hours != 1 || u.TotalHours != 6 {
		t.Errorf("usage = %+v", u)
	}
	if u, _ := st.AdminUsage(ctx, base.Add(-time.Hour), base.Add(3*time.Hour), 1); len(u.Accounts) != 1 {
		t.Errorf("limit 1: %+v", u.Accounts)
	}
	for i := range 3 {
		if err := st.AppendAdminAccess(ctx, &admin.Access{ID: model.NewID(), AccountID: a.ID, Method: "GET", Path: "/v1/admin/metrics", Status: 200 + i, At: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.AdminAccessLog(ctx, 2, 0)
	if err != nil || len(got) != 2 || got[0].Status != 202 || !got[0].At.Equal(base.Add(2*time.Second)) {
		t.Errorf("access log = %+v, %v", got, err)
	}
	if got, _ := st.AdminAccessLog(ctx, 10, 2); len(got) != 1 || got[0].Status != 200 {
		t.Errorf("offset 2: %+v", got)
	}
	if es, err := st.AdminAuditLog(ctx, "", 10, 0); err != nil || len(es) != 0 {
		t.Errorf("audit log = %v, %v", es, err)
	}
}
