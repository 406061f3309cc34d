package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/webhooks"
)

// listedImages is an image store whose List answers imgs, for any
// account, in the order given (the server orders them).
type listedImages struct {
	stubImages
	imgs []api.Image
}

func (l listedImages) List(context.Context, string) ([]api.Image, error) {
	return append([]api.Image(nil), l.imgs...), nil
}

// pagesOf follows path's rel="next" links with key, each page at most
// limit long, and returns the ids of every page in order.
func pagesOf(t *testing.T, e *env, key, path string, limit int, id func([]byte) []string) []string {
	t.Helper()
	var got []string
	for page := 0; path != ""; page++ {
		resp, body := e.do("GET", path, key, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("page %d (%s): %d %s", page, path, resp.StatusCode, body)
		}
		ids := id(body)
		if len(ids) > limit || len(ids) == 0 {
			t.Fatalf("page %d holds %d, limit %d", page, len(ids), limit)
		}
		got = append(got, ids...)
		prefix, _, _ := strings.Cut(path, "?")
		path = api.NextLink(resp.Header)
		if path != "" && (!strings.HasPrefix(path, prefix+"?") || !strings.Contains(path, fmt.Sprintf("limit=%d", limit))) {
			t.Fatalf("page %d: next link %q keeps neither the route nor the query", page, path)
		}
		if page > 100 {
			t.Fatal("more than 100 pages")
		}
	}
	return got
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantBadPages: a bad limit or cursor is 422 with a hint.
func wantBadPages(t *testing.T, e *env, key, path string) {
	t.Helper()
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=bm9wZQ", "limit=2&cursor=MTIzLi4v"} {
		resp, body := e.do("GET", path+"?"+q, key, nil)
		if apiErr := wantError(t, resp, body, 422, api.CodeValidation); apiErr != nil && apiErr.Hint == "" {
			t.Errorf("%s?%s: no hint", path, q)
		}
	}
}

// TestListWebhookPages: GET /v1/webhooks takes limit and cursor as
// GET /v1/sandboxes does: following the Link rel="next" headers lists
// every subscription once, in the unpaged order (subscriptions created
// in the same instant too); without limit nothing changes.
func TestListWebhookPages(t *testing.T) {
	e := newEnv(t, server.Config{})
	for i := range 7 {
		if resp, body := e.do("POST", "/v1/webhooks", e.KeyA, api.CreateWebhookRequest{URL: fmt.Sprintf("https://h%d.example.com/in", i), EventTypes: []string{api.EventAuditLogEntry}}); resp.StatusCode != 201 {
			t.Fatalf("create webhook: %d %s", resp.StatusCode, body)
		}
		if i%3 == 2 {
			e.clock.Advance(time.Second)
		}
	}
	ids := func(body []byte) []string {
		var hs []api.Webhook
		mustUnmarshal(t, body, &hs)
		out := make([]string, len(hs))
		for i, h := range hs {
			out[i] = h.ID
		}
		return out
	}
	resp, body := e.do("GET", "/v1/webhooks", e.KeyA, nil)
	all := ids(body)
	if resp.StatusCode != 200 || len(all) != 7 || resp.Header.Get("Link") != "" {
		t.Fatalf("unpaged list: %d, %d webhooks, Link %q; want 200, 7, none", resp.StatusCode, len(all), resp.Header.Get("Link"))
	}
	for _, limit := range []int{1, 3, 7} {
		if diff := gocmp.Diff(all, pagesOf(t, e, e.KeyA, fmt.Sprintf("/v1/webhooks?limit=%d", limit), limit, ids)); diff != "" {
			t.Errorf("limit %d: paged ids (-unpaged +paged):\n%s", limit, diff)
		}
	}
	wantBadPages(t, e, e.KeyA, "/v1/webhooks")
	var iterated []string
	for h, err := range client.New(e.URL, e.KeyA).Webhooks(t.Context(), 2) {
		if err != nil {
			t.Fatalf("Webhooks: %v", err)
		}
		iterated = append(iterated, h.ID)
	}
	if diff := gocmp.Diff(all, iterated); diff != "" {
		t.Errorf("the Go client's iterator (-unpaged +iterated):\n%s", diff)
	}
	resp, _ = e.do("GET", "/v1/webhooks?limit=1", e.KeyA, nil)
	if resp, body := e.do("GET", api.NextLink(resp.Header), e.KeyB, nil); resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("account B with A's cursor: %d %s, want 200 []", resp.StatusCode, body)
	}
}

// TestListImagePages: GET /v1/images pages as GET /v1/sandboxes does,
// newest first, images of the same instant by id.
func TestListImagePages(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var imgs []api.Image
	for i := range 9 {
		imgs = append(imgs, api.Image{ID: fmt.Sprintf("img_%024x", i*7919%13), Label: fmt.Sprint(i), CreatedAt: at.Add(time.Duration(i/3) * time.Second)})
	}
	e := newEnv(t, server.Config{Images: listedImages{imgs: imgs}})
	ids := func(body []byte) []string {
		var is []api.Image
		mustUnmarshal(t, body, &is)
		out := make([]string, len(is))
		for i, img := range is {
			out[i] = img.ID
		}
		return out
	}
	resp, body := e.do("GET", "/v1/images", e.KeyA, nil)
	all := ids(body)
	if resp.StatusCode != 200 || len(all) != 9 || resp.Header.Get("Link") != "" {
		t.Fatalf("unpaged list: %d, %d images, Link %q; want 200, 9, none", resp.StatusCode, len(all), resp.Header.Get("Link"))
	}
	want := slices.Clone(imgs)
	slices.SortFunc(want, func(a, b api.Image) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	if diff := gocmp.Diff(ids(mustJSON(t, want)), all); diff != "" {
		t.Errorf("unpaged order, not newest first then id descending (-want +got):\n%s", diff)
	}
	for _, limit := range []int{1, 2, 4, 9} {
		if diff := gocmp.Diff(all, pagesOf(t, e, e.KeyA, fmt.Sprintf("/v1/images?limit=%d", limit), limit, ids)); diff != "" {
			t.Errorf("limit %d: paged ids (-unpaged +paged):\n%s", limit, diff)
		}
	}
	wantBadPages(t, e, e.KeyA, "/v1/images")
	var iterated []string
	for img, err := range client.New(e.URL, e.KeyA).Images(t.Context(), 4) {
		if err != nil {
			t.Fatalf("Images: %v", err)
		}
		iterated = append(iterated, img.ID)
	}
	if diff := gocmp.Diff(all, iterated); diff != "" {
		t.Errorf("the Go client's iterator (-unpaged +iterated):\n%s", diff)
	}
}

// TestListWebhookDeliveryPages: a webhook's deliveries keep their default
// page of 20 and their offset, and now say with a Link rel="next" header
// (the cursor of the page's last delivery, offset left out) where the
// next page is; following it lists every delivery once.
func TestListWebhookDeliveryPages(t *testing.T) {
	e := newEnv(t, server.Config{})
	resp, body := e.do("POST", "/v1/webhooks", e.KeyA, api.CreateWebhookRequest{URL: "https://h.example.com/in", EventTypes: []string{api.EventAuditLogEntry}})
	if resp.StatusCode != 201 {
		t.Fatalf("create webhook: %d %s", resp.StatusCode, body)
	}
	var hook api.Webhook
	mustUnmarshal(t, body, &hook)
	at := e.clock.Now()
	var ds []*webhooks.Delivery
	for i := range 25 {
		ds = append(ds, &webhooks.Delivery{
			ID: model.NewID(), WebhookID: hook.ID, AccountID: e.AcctA.ID, EventID: model.NewID(), EventType: api.EventAuditLogEntry,
			Payload: []byte(`{}`), Status: webhooks.StatusFailed, NextAttemptAt: at, CreatedAt: at.Add(time.Duration(i/4) * time.Second),
		})
	}
	if err := e.Store.(webhooks.Store).EnqueueWebhookDeliveries(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	ids := func(body []byte) []string {
		var ds []api.WebhookDelivery
		mustUnmarshal(t, body, &ds)
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = d.ID
		}
		return out
	}
	base := "/v1/webhooks/" + hook.ID + "/deliveries"
	resp, body = e.do("GET", base+"?limit=100", e.KeyA, nil)
	all := ids(body)
	if resp.StatusCode != 200 || len(all) != 25 || resp.Header.Get("Link") != "" {
		t.Fatalf("one page of 100: %d, %d deliveries, Link %q; want 200, 25, none", resp.StatusCode, len(all), resp.Header.Get("Link"))
	}
	resp, body = e.do("GET", base, e.KeyA, nil)
	next := api.NextLink(resp.Header)
	if got := ids(body); len(got) != 20 || next == "" || strings.Contains(next, "limit=") {
		t.Fatalf("default page: %d deliveries, Link %q; want 20 and a next link", len(got), next)
	}
	if diff := gocmp.Diff(all, pagesOf(t, e, e.KeyA, base+"?limit=3", 3, ids)); diff != "" {
		t.Errorf("limit 3: paged ids (-unpaged +paged):\n%s", diff)
	}
	// An offset pages as before; the next link carries the cursor instead.
	resp, body = e.do("GET", base+"?limit=5&offset=5", e.KeyA, nil)
	next = api.NextLink(resp.Header)
	if diff := gocmp.Diff(all[5:10], ids(body)); diff != "" || strings.Contains(next, "offset") || !strings.Contains(next, "cursor=") {
		t.Errorf("offset 5: Link %q (want a cursor, no offset); ids (-want +got):\n%s", next, diff)
	}
	if _, body := e.do("GET", next, e.KeyA, nil); !slices.Equal(ids(body), all[10:15]) {
		t.Errorf("the page after offset 5: %v, want %v", ids(body), all[10:15])
	}
	var iterated []string
	for d, err := range client.New(e.URL, e.KeyA).WebhookDeliveryPages(t.Context(), hook.ID, 7) {
		if err != nil {
			t.Fatalf("WebhookDeliveryPages: %v", err)
		}
		iterated = append(iterated, d.ID)
	}
	if diff := gocmp.Diff(all, iterated); diff != "" {
		t.Errorf("the Go client's iterator (-unpaged +iterated):\n%s", diff)
	}
	for _, q := range []string{"limit=0", "limit=101", "cursor=bm9wZQ"} {
		resp, body := e.do("GET", base+"?"+q, e.KeyA, nil)
		if apiErr := wantError(t, resp, body, 422, api.CodeValidation); apiErr != nil && apiErr.Hint == "" {
			t.Errorf("%s: no hint", q)
		}
	}
}
