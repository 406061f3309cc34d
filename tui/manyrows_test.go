package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestListManySandboxes: an account with 5000 ended sandboxes and a few
// live ones (one older than every ended one). A refresh reads the live
// ones and one page of the newest, never the whole history; the list
// shows every live sandbox and the newest ended ones, the title says
// there are more, and a refresh keeps the selection.
func TestListManySandboxes(t *testing.T) {
	src := newFakeSource()
	src.sandboxes = nil
	for i := range 5000 {
		src.sandboxes = append(src.sandboxes, api.Sandbox{
			ID: fmt.Sprintf("dead%04d-0000-4a5b-9c0d-000000000000", i), Status: api.StatusDestroyed, Size: api.SizeSmall,
			CreatedAt: epoch.Add(-time.Duration(i+1) * time.Minute), ExpiresAt: epoch.Add(-time.Duration(i) * time.Minute),
		})
	}
	live := []api.Sandbox{
		{ID: "live0001-0000-4a5b-9c0d-000000000000", Status: api.StatusActive, Size: api.SizeSmall, CreatedAt: epoch, ExpiresAt: epoch.Add(time.Hour)},
		{ID: "live0002-0000-4a5b-9c0d-000000000000", Status: api.StatusPaused, Size: api.SizeSmall, CreatedAt: epoch.Add(-30 * time.Minute), ExpiresAt: epoch.Add(time.Hour)},
		// Older than every ended one: not on the page, listed all the same.
		{ID: "live0003-0000-4a5b-9c0d-000000000000", Status: api.StatusActive, Size: api.SizeSmall, CreatedAt: epoch.Add(-1000 * time.Hour), ExpiresAt: epoch.Add(time.Hour)},
	}
	src.sandboxes = append(src.sandboxes, live...)
	m := newTestModel(t, src, 100, 30)
	load(m)

	if diff := cmp.Diff([]string{"active_only=true", fmt.Sprintf("limit=%d", listPage)}, src.listed); diff != "" {
		t.Errorf("a refresh read (-want +got):\n%s", diff)
	}
	// The page holds live0001, live0002 and the 198 newest ended ones;
	// live0003 comes from the live list.
	if got, want := len(m.list.all), listPage+1; got != want {
		t.Errorf("list holds %d sandboxes, want %d", got, want)
	}
	if got := rowIDs(m)[:3]; !cmp.Equal(got, []string{"live0001", "live0003", "live0002"}) {
		t.Errorf("first rows %v, want the live ones first: live0001, live0003 (active), live0002 (paused)", got)
	}
	if view := m.View(); !strings.Contains(view, fmt.Sprintf("sandboxes (%d+)", listPage+1)) {
		t.Errorf("title does not say there are more:\n%s", view)
	}

	// Select an ended one, refresh with a new sandbox: still selected.
	keys(m, "G")
	sel := m.list.selected
	src.sandboxes = append(src.sandboxes, api.Sandbox{ID: "newer000-0000-4a5b-9c0d-000000000000", Status: api.StatusActive, Size: api.SizeSmall, CreatedAt: epoch.Add(time.Second)})
	src.listed = nil
	load(m)
	if m.list.selected != sel {
		t.Errorf("selected %s after refresh, want %s", m.list.selected, sel)
	}
	if len(src.listed) != 2 {
		t.Errorf("the refresh read %v, want one live list and one page", src.listed)
	}

	// Few sandboxes: everything, and no "+".
	few := newFakeSource()
	m = newTestModel(t, few, 100, 30)
	load(m)
	if view := m.View(); !strings.Contains(view, "sandboxes (3)") || strings.Contains(view, "sandboxes (3+)") {
		t.Errorf("a short list's title:\n%s", view)
	}
}
