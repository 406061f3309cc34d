package sqlstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// testExecLogAfter: what a live watcher reads, by cursor and by entry id.
func testExecLogAfter(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	var ids []string
	for i := range 7 {
		for _, sb := range []string{"sb-1", "sb-2"} {
			e := logEntry(sb, "acct", "exec", i)
			if err := st.AppendExecLog(ctx, e); err != nil {
				t.Fatal(err)
			}
			if sb == "sb-1" {
				ids = append(ids, e.ID)
			}
		}
	}
	tests := []struct {
		after int64
		limit int
		want  []string
	}{
		{0, 100, ids},
		{3, 100, ids[3:]},
		{3, 2, ids[3:5]},
		{7, 100, nil},
		{99, 100, nil},
	}
	for _, tt := range tests {
		got, err := st.ExecLogAfter(ctx, "sb-1", tt.after, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for i, e := range got {
			gotIDs = append(gotIDs, e.ID)
			if e.Seq != tt.after+int64(i)+1 || e.SandboxID != "sb-1" {
				t.Errorf("ExecLogAfter(%d)[%d] = seq %d of %s", tt.after, i, e.Seq, e.SandboxID)
			}
		}
		if diff := cmp.Diff(tt.want, gotIDs); diff != "" {
			t.Errorf("ExecLogAfter(%d, %d) ids (-want +got):\n%s", tt.after, tt.limit, diff)
		}
	}
	for i, id := range ids {
		seq, err := st.ExecLogSeq(ctx, "sb-1", id)
		if err != nil || seq != int64(i+1) {
			t.Errorf("ExecLogSeq(%s) = %d, %v; want %d", id, seq, err, i+1)
		}
	}
	if _, err := st.ExecLogSeq(ctx, "sb-2", ids[0]); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("ExecLogSeq of another sandbox's entry = %v, want ErrNotFound", err)
	}
	if _, err := st.ExecLogSeq(ctx, "sb-1", "nope"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("ExecLogSeq(unknown) = %v, want ErrNotFound", err)
	}
}

// testAllowedCommands: set, replace, read back, scope and clear.
func testAllowedCommands(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "allow-a@example.com")
	b := mustAccount(t, st, "allow-b@example.com")
	if got, err := st.AllowedCommands(ctx, a.ID); err != nil || got != nil {
		t.Fatalf("AllowedCommands before any = %v, %v; want nil, nil", got, err)
	}
	first := []api.CommandRule{{Command: "ls"}, {Command: "curl", ArgsAllow: []string{"^https://"}, ArgsDeny: []string{"-o"}}}
	second := []api.CommandRule{{Command: "git", ArgsAllow: []string{"status"}}}
	for _, rules := range [][]api.CommandRule{first, second} {
		if err := st.SetAllowedCommands(ctx, a.ID, rules, base); err != nil {
			t.Fatal(err)
		}
		got, err := st.AllowedCommands(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rules, got); diff != "" {
			t.Errorf("AllowedCommands (-set +got):\n%s", diff)
		}
	}
	if got, _ := st.AllowedCommands(ctx, b.ID); got != nil {
		t.Errorf("another account's rules = %v, want none", got)
	}
	if err := st.SetAllowedCommands(ctx, a.ID, nil, base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err := st.AllowedCommands(ctx, a.ID); err != nil || got != nil {
		t.Errorf("AllowedCommands after clearing = %v, %v; want nil, nil", got, err)
	}
	if err := st.SetAllowedCommands(ctx, a.ID, nil, base); err != nil {
		t.Errorf("clearing twice: %v", err)
	}
}
