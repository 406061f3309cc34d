package sqlstore

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// TestSandboxPageSeeksTheCursor: a page after a cursor starts at the
// cursor in the index (a row value), for the whole history and for the
// live sandboxes, rather than reading the account's rows from the newest
// and filtering out the ones before it: a page deep in a long history
// costs as little as the first (BENCHMARKS.md, session 20).
func TestSandboxPageSeeksTheCursor(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tt := range []struct {
		page model.SandboxPage
		want string
	}{
		{model.SandboxPage{Limit: 31, AfterCreated: time.Now(), AfterID: "x"}, "USING INDEX sandboxes_account_created_id (account_id=? AND (created_at,id)<(?,?))"},
		{model.SandboxPage{ActiveOnly: true, Limit: 31, AfterCreated: time.Now(), AfterID: "x"}, "USING INDEX sandboxes_account_status_created (account_id=? AND status=? AND (created_at,id)<(?,?))"},
	} {
		query, args := sandboxPageQuery("acct", tt.page)
		rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if !strings.Contains(strings.Join(plan, "\n"), tt.want) {
			t.Errorf("active_only=%v: the page's plan does not seek the cursor (want a step %q):\n%s", tt.page.ActiveOnly, tt.want, strings.Join(plan, "\n"))
		}
	}
}
