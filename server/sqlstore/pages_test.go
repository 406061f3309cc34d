package sqlstore_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// testSandboxPages pages an account's sandboxes with creates, destroys
// and rows of the same created_at between the pages: every row there
// before the first page and still listed at the end is seen exactly once,
// in the list's order, and the new rows (newer than any cursor) not at all.
func testSandboxPages(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	other := mustAccount(t, st, "b@example.com")
	var before []*model.Sandbox
	for i := range 23 {
		// Pairs share a created_at: the id breaks the tie.
		before = append(before, mustSandbox(t, st, newSandbox(a, base.Add(time.Duration(i/2)*time.Second))))
		mustSandbox(t, st, newSandbox(other, base.Add(time.Duration(i)*time.Second)))
	}
	want, err := st.ListSandboxes(ctx, a.ID, true)
	if err != nil || len(want) != len(before) {
		t.Fatalf("ListSandboxes = %d rows, %v; want %d", len(want), err, len(before))
	}
	destroyed := want[len(want)-3] // on a later page than the first
	var got []string
	p := model.SandboxPage{ActiveOnly: true, Limit: 5}
	for page := 0; ; page++ {
		rows, err := st.ListSandboxPage(ctx, a.ID, p)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(rows) > p.Limit {
			t.Fatalf("page %d has %d rows, limit %d", page, len(rows), p.Limit)
		}
		if len(rows) == 0 {
			break
		}
		got = append(got, ids(rows)...)
		last := rows[len(rows)-1]
		p.AfterCreated, p.AfterID = last.CreatedAt, last.ID
		// Between pages: a new sandbox (newest of all, as a create is),
		// and one of the rows not yet listed is destroyed.
		mustSandbox(t, st, newSandbox(a, base.Add(time.Hour+time.Duration(page)*time.Second)))
		if page == 0 {
			if _, err := st.UpdateSandbox(ctx, destroyed.ID, func(sb *model.Sandbox) error {
				sb.Status, sb.DestroyReason = api.StatusDestroyed, model.ReasonDeleted
				return nil
			}); err != nil {
				t.Fatalf("UpdateSandbox: %v", err)
			}
		}
	}
	var wantIDs []string
	for _, sb := range want {
		if sb.ID != destroyed.ID {
			wantIDs = append(wantIDs, sb.ID)
		}
	}
	if diff := cmp.Diff(wantIDs, got); diff != "" {
		t.Errorf("paged list (-want +got):\n%s", diff)
	}

	// All, destroyed ones included, the same as one unpaged read.
	all, err := st.ListSandboxes(ctx, a.ID, false)
	if err != nil {
		t.Fatalf("ListSandboxes(all): %v", err)
	}
	got = nil
	p = model.SandboxPage{Limit: 4}
	for {
		rows, err := st.ListSandboxPage(ctx, a.ID, p)
		if err != nil {
			t.Fatalf("ListSandboxPage(all): %v", err)
		}
		if len(rows) == 0 {
			break
		}
		got = append(got, ids(rows)...)
		p.AfterCreated, p.AfterID = rows[len(rows)-1].CreatedAt, rows[len(rows)-1].ID
	}
	if diff := cmp.Diff(ids(all), got); diff != "" {
		t.Errorf("paged list of all (-want +got):\n%s", diff)
	}
}
