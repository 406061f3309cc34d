package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// imageRecords is images.Records, which the Store implements.
type imageRecords interface {
	InsertImage(ctx context.Context, accountID string, img api.Image) error
	UpdateImage(ctx context.Context, img api.Image) error
	ImageByID(ctx context.Context, id string) (string, api.Image, bool, error)
	ListImages(ctx context.Context, accountID string) ([]api.Image, error)
	RemoveImage(ctx context.Context, id string) error
	LabelImage(ctx context.Context, id, label string) error
	UseImage(ctx context.Context, imageID, sandboxID string) error
	ImageUsers(ctx context.Context, imageID string) ([]string, error)
}

// testImages: image records and their users survive a reopen, are scoped
// by account, and go with RemoveImage; egress grants round-trip.
func testImages(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st := open(t)
	ctx := t.Context()
	a, b := mustAccount(t, st, "img-a@example.com"), mustAccount(t, st, "img-b@example.com")
	recs, ok := st.(imageRecords)
	if !ok {
		t.Fatal("the store does not keep image records")
	}
	built := api.Image{
		ID: "img_000000000000000000000001", Label: "jq", Status: api.ImageQueued, Source: api.ImageSourceBuild,
		Spec: &api.ImageSpec{Base: "boxkite-default", AptPackages: []string{"jq"}}, CreatedAt: base,
	}
	imported := api.Image{ID: "img_000000000000000000000002", Status: api.ImageQueued, Source: api.ImageSourceImport, CreatedAt: base.Add(time.Second)}
	for _, c := range []struct {
		acct string
		img  api.Image
	}{{a.ID, built}, {b.ID, imported}} {
		if err := recs.InsertImage(ctx, c.acct, c.img); err != nil {
			t.Fatal(err)
		}
	}
	if err := recs.InsertImage(ctx, a.ID, built); err == nil {
		t.Error("inserting an image id twice succeeded")
	}
	done := base.Add(time.Minute)
	built.Status, built.SizeBytes, built.CompletedAt = api.ImageCompleted, 1234, &done
	if err := recs.UpdateImage(ctx, built); err != nil {
		t.Fatal(err)
	}
	imported.Status, imported.CompletedAt = api.ImageFailed, &done
	imported.FailureReason, imported.FailureCode, imported.FailureHint = "it tried", api.CodeImageBuildEgressRefused, "do not"
	if err := recs.UpdateImage(ctx, imported); err != nil {
		t.Fatal(err)
	}
	if err := recs.UpdateImage(ctx, api.Image{ID: "img_ffffffffffffffffffffffff"}); err == nil {
		t.Error("updating a missing image succeeded")
	}
	if err := recs.UseImage(ctx, built.ID, "sb1"); err != nil {
		t.Fatal(err)
	}
	sb := mustSandbox(t, st, newSandbox(a, base))
	if err := st.SetSandboxEgress(ctx, sb.ID, []string{"api.example.com:443", "*.svc.example:8443"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open(t)
	recs = st.(imageRecords)
	acct, got, found, err := recs.ImageByID(ctx, built.ID)
	if err != nil || !found || acct != a.ID {
		t.Fatalf("ImageByID = %s, %v, %v", acct, found, err)
	}
	if diff := cmp.Diff(built, got); diff != "" {
		t.Errorf("image after reopen (-want +got):\n%s", diff)
	}
	list, err := recs.ListImages(ctx, b.ID)
	if err != nil || len(list) != 1 || !cmp.Equal(list[0], imported) {
		t.Errorf("ListImages(b) = %v, %v; want %v", list, err, imported)
	}
	if all, err := recs.ListImages(ctx, ""); err != nil || len(all) != 2 || all[0].ID != imported.ID {
		t.Errorf("ListImages(all) = %v, %v; want both, newest first", all, err)
	}
	if users, err := recs.ImageUsers(ctx, built.ID); err != nil || !cmp.Equal(users, []string{"sb1"}) {
		t.Errorf("ImageUsers = %v, %v", users, err)
	}
	if g, err := st.SandboxEgress(ctx, sb.ID); err != nil || !cmp.Equal(g, []string{"api.example.com:443", "*.svc.example:8443"}) {
		t.Errorf("SandboxEgress = %v, %v", g, err)
	}
	if g, err := st.SandboxEgress(ctx, "other"); err != nil || g != nil {
		t.Errorf("SandboxEgress(none) = %v, %v", g, err)
	}
	if err := recs.LabelImage(ctx, built.ID, "tools"); err != nil {
		t.Fatal(err)
	}
	if _, img, _, err := recs.ImageByID(ctx, built.ID); err != nil || img.Label != "tools" {
		t.Errorf("after LabelImage: %+v, %v", img, err)
	}
	if err := recs.RemoveImage(ctx, built.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, found, err := recs.ImageByID(ctx, built.ID); err != nil || found {
		t.Errorf("after RemoveImage: found %v, %v", found, err)
	}
	if users, err := recs.ImageUsers(ctx, built.ID); err != nil || len(users) != 0 {
		t.Errorf("users after RemoveImage = %v, %v", users, err)
	}
}
