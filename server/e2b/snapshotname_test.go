package e2b

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// snapshotPlane lists fixed snapshots.
type snapshotPlane struct {
	listPlane
	sns []SnapshotInfo
}

func (p snapshotPlane) Snapshots(context.Context, Caller, string) ([]SnapshotInfo, error) {
	return slices.Clone(p.sns), nil // the handler filters it in place
}

// TestListSnapshotsByName: listSnapshots({name}) reads name as E2B does,
// "[namespace/]alias[:tag]" or an id: it was compared with the name as
// given, so "snap:default", "team/snap", "SNAP", the id or "tagged" (for
// "tagged:v1") found nothing.
func TestListSnapshotsByName(t *testing.T) {
	t.Parallel()
	sns := []SnapshotInfo{
		{ID: "0a1b-plain", Name: "snap"},
		{ID: "0a1b-tagged", Name: "tagged:v1"},
		{ID: "0a1b-tagged2", Name: "tagged:v2"},
		{ID: "0a1b-ns", Name: "team/spaced"},
		{ID: "0a1b-unnamed"},
	}
	h := New(snapshotPlane{listPlane: listPlane{reached: new(int)}, sns: sns}, ownedStore{reached: new(bool)}, nil)
	for _, tt := range []struct {
		name string
		want []string // the ids listed
	}{
		{"snap", []string{"0a1b-plain"}},
		{"snap:default", []string{"0a1b-plain"}},
		{"snap:v1", nil},
		{"team/snap", []string{"0a1b-plain"}},
		{" SNAP ", []string{"0a1b-plain"}},
		{"tagged", []string{"0a1b-tagged", "0a1b-tagged2"}},
		{"tagged:v2", []string{"0a1b-tagged2"}},
		{"tagged:default", nil},
		{"other/tagged:v1", []string{"0a1b-tagged"}},
		{"spaced", []string{"0a1b-ns"}},
		{"0a1b-unnamed", []string{"0a1b-unnamed"}},
		{"0a1b-tagged:v1", []string{"0a1b-tagged"}},
		{"0a1b-tagged:v2", nil},
		{"0A1B-PLAIN:default", []string{"0a1b-plain"}},
		{"nosuch", nil},
		{"tag", nil},
	} {
		w := httptest.NewRecorder()
		h.mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/snapshots?name="+url.QueryEscape(tt.name), nil))
		var got []snapshotJSON
		if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != http.StatusOK || err != nil {
			t.Fatalf("name=%q: %d %s", tt.name, w.Code, w.Body)
		}
		var ids []string
		for _, sn := range got {
			ids = append(ids, sn.SnapshotID)
		}
		if diff := cmp.Diff(tt.want, ids); diff != "" {
			t.Errorf("name=%q (-want +got):\n%s", tt.name, diff)
		}
	}
}
