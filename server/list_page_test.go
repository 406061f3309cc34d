package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// TestListSandboxPages: GET /v1/sandboxes?limit=N answers the reference's
// bare array, at most N long, and a Link rel="next" header while there is
// more; following it lists every sandbox once, in the unpaged order, also
// with a sandbox created between two pages. Without limit nothing changes.
func TestListSandboxPages(t *testing.T) {
	e := newEnv(t, server.Config{})
	at := e.clock.Now().Add(-time.Hour)
	for i := range 11 {
		sb := &model.Sandbox{
			ID: model.NewID(), AccountID: e.AcctA.ID, Label: fmt.Sprintf("s%d", i), Size: api.SizeSmall,
			StorageGB: 1, LifetimeMinutes: 30, Status: api.StatusActive,
			CreatedAt: at.Add(time.Duration(i/2) * time.Second), ExpiresAt: at.Add(time.Hour),
			Driver: "fake", Endpoint: e.Sidecar.Endpoint(),
		}
		if err := e.Store.CreateSandbox(t.Context(), sb); err != nil {
			t.Fatalf("CreateSandbox: %v", err)
		}
	}
	var all []api.Sandbox
	resp, body := e.do("GET", "/v1/sandboxes", e.KeyA, nil)
	mustUnmarshal(t, body, &all)
	if resp.StatusCode != 200 || len(all) != 11 || resp.Header.Get("Link") != "" {
		t.Fatalf("unpaged list: %d, %d sandboxes, Link %q; want 200, 11, none", resp.StatusCode, len(all), resp.Header.Get("Link"))
	}

	var got []string
	path := "/v1/sandboxes?active_only=true&limit=4"
	for page := 0; path != ""; page++ {
		resp, body := e.do("GET", path, e.KeyA, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("page %d (%s): %d %s", page, path, resp.StatusCode, body)
		}
		var sbs []api.Sandbox
		mustUnmarshal(t, body, &sbs)
		if len(sbs) > 4 {
			t.Fatalf("page %d holds %d, limit 4", page, len(sbs))
		}
		for _, sb := range sbs {
			got = append(got, sb.ID)
		}
		path = api.NextLink(resp.Header)
		if path != "" && (!strings.HasPrefix(path, "/v1/sandboxes?") || !strings.Contains(path, "active_only=true") || !strings.Contains(path, "limit=4")) {
			t.Fatalf("page %d: next link %q keeps neither the route nor the query", page, path)
		}
		if page == 0 { // a create between pages is newer than every cursor
			resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "late"})
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create: %d %s", resp.StatusCode, body)
			}
		}
	}
	var want []string
	for _, sb := range all {
		want = append(want, sb.ID)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paged ids (-unpaged +paged):\n%s", diff)
	}

	// The Go client's iterator reads the same, 12 now, in pages of 5.
	c := client.New(e.URL, e.KeyA)
	var n int
	for sb, err := range c.Sandboxes(t.Context(), false, 5) {
		if err != nil {
			t.Fatalf("Sandboxes: %v", err)
		}
		if n == 0 && sb.Label != "late" {
			t.Errorf("first sandbox %q, want the newest, late", sb.Label)
		}
		n++
	}
	if n != 12 {
		t.Errorf("iterator gave %d sandboxes, want 12", n)
	}

	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=bm9wZQ", "limit=2&cursor=MTIzLi4v"} {
		resp, body := e.do("GET", "/v1/sandboxes?"+q, e.KeyA, nil)
		if apiErr := wantError(t, resp, body, 422, api.CodeValidation); apiErr != nil && apiErr.Hint == "" {
			t.Errorf("%s: no hint", q)
		}
	}
	// Another account's cursor reads nothing of this account's.
	resp, _ = e.do("GET", "/v1/sandboxes?limit=1", e.KeyA, nil)
	resp, body = e.do("GET", api.NextLink(resp.Header), e.KeyB, nil)
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("account B with A's cursor: %d %s, want 200 []", resp.StatusCode, body)
	}
}

// TestListLinkUnderPublicURL: with a public URL configured (a proxy that
// adds a path prefix), the next link starts with it, so a client that
// follows it as given keeps the prefix; the Go client, which takes only
// the link's query, pages through the same.
func TestListLinkUnderPublicURL(t *testing.T) {
	e := newEnv(t, server.Config{PublicURL: "https://bk.example.test/boxkite/"})
	for _, label := range []string{"one", "two"} {
		if resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: label}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d %s", label, resp.StatusCode, body)
		}
	}
	resp, body := e.do("GET", "/v1/sandboxes?limit=1", e.KeyA, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("page: %d %s", resp.StatusCode, body)
	}
	next := api.NextLink(resp.Header)
	if !strings.HasPrefix(next, "https://bk.example.test/boxkite/v1/sandboxes?") || !strings.Contains(next, "cursor=") {
		t.Errorf("next link %q, want it under the public URL https://bk.example.test/boxkite/", next)
	}
	var n int
	for _, err := range client.New(e.URL, e.KeyA).Sandboxes(t.Context(), false, 1) {
		if err != nil {
			t.Fatalf("Sandboxes: %v", err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("iterator gave %d sandboxes, want 2", n)
	}
}
