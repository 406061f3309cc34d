package sqlstore

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestUsageHoursFromTheIndex: the month's hours that every create reads
// (twice, once in the write slot) come from the index over the account's
// sandboxes by creation alone, not from each sandbox's row, so the read
// does not slow down as badly with the sandboxes an account made this
// month (migration 0281, issue 27). Without the columns in the index,
// SQLite's plan reads the index and then every row.
func TestUsageHoursFromTheIndex(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+usageCountsQuery,
		model.StatusCreating, api.StatusActive, "acct", model.StatusCreating, api.StatusActive,
		time.Now().UnixMicro(), "acct", int64(0))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := "USING COVERING INDEX sandboxes_account_created_id (account_id=? AND created_at>?)"
	for _, step := range plan {
		if strings.Contains(step, want) {
			return
		}
	}
	t.Errorf("the usage query's plan does not read the month's hours from the index alone (want a step %q):\n%s", want, strings.Join(plan, "\n"))
}
