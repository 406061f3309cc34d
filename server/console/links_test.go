package console_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestLinkOnAnyServer: a one-time link minted by one server opens on any
// other sharing its database (the same derived link key), once even when
// browsers race for it, and not after its expiry, when its key is
// revoked; a server with another key cannot open it. No link key is left
// valid.
func TestLinkOnAnyServer(t *testing.T) {
	srv := servertest.New(t)
	ctx := context.Background()
	before, err := srv.Server.ConsoleLinkKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Restart(t) // a new server over the same database derives the same key
	after, err := srv.Server.ConsoleLinkKey(ctx)
	if err != nil || !bytes.Equal(before, after) || len(after) != 32 {
		t.Fatalf("the link key before and after a restart: %x, %x (%v)", before, after, err)
	}
	// Other servers: consoles in front of the same API.
	serve := func(cfg console.Config) string {
		cfg.API = srv.Server
		c, err := console.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(c)
		t.Cleanup(hs.Close)
		return hs.URL
	}
	other := serve(console.Config{LinkKey: srv.Server.ConsoleLinkKey})
	late := serve(console.Config{LinkKey: srv.Server.ConsoleLinkKey, Now: func() time.Time { return time.Now().Add(console.DefaultLinkTTL) }})
	alien := serve(console.Config{})

	mint := func() string {
		t.Helper()
		resp, body := apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/ui/links", nil)
		var link console.LinkResponse
		mustJSON(t, body, &link)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /ui/links: %d %s", resp.StatusCode, body)
		}
		return link.Path
	}
	open := func(base, path string) *browser {
		b := newBrowser(t, base)
		resp, _ := b.do("GET", path, nil, "Origin", "")
		if want := "/ui/signin?link=expired"; b.cookie != nil {
			want = "/ui/"
		} else if resp.Header.Get("Location") != want {
			t.Errorf("a refused link sends to %q, want %q", resp.Header.Get("Location"), want)
		}
		return b
	}

	path := mint()
	if open(alien, path).cookie != nil {
		t.Error("a server with another link key opened the link")
	}
	if open(late, path).cookie != nil {
		t.Error("an expired link opened")
	}
	if open(other, path).cookie != nil {
		t.Error("a link opened after a server found it expired (its key is revoked then)")
	}

	path = mint()
	b := open(other, path)
	if b.cookie == nil {
		t.Fatal("the link did not open on another server")
	}
	if resp, body := b.do("GET", "/ui/session", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("session on the other server: %d %s", resp.StatusCode, body)
	}
	if open(srv.BaseURL, path).cookie != nil {
		t.Error("the link opened again on the server that minted it")
	}

	validKeys := func() map[string]int {
		t.Helper()
		_, body := apiCall(t, srv.BaseURL, srv.APIKey, "GET", "/v1/api-keys", nil)
		var keys []api.APIKey
		mustJSON(t, body, &keys)
		valid := map[string]int{}
		for _, k := range keys {
			if k.RevokedAt == nil {
				valid[k.Name]++
			}
		}
		return valid
	}
	if v := validKeys(); v[console.LinkKeyName] != 0 || v[console.SessionKeyName] != 1 {
		t.Errorf("valid keys by name: %v; want no link key and 1 session", v)
	}

	// Browsers racing for one link: one is signed in. (A racer whose key
	// minting the link key's revocation cut short may leave a session key
	// nobody ever saw, revoked at a sign-in 12 hours on.)
	path = mint()
	var wg sync.WaitGroup
	var mu sync.Mutex
	signedIn := 0
	for i := range 6 {
		base := srv.BaseURL
		if i%2 == 1 {
			base = other
		}
		wg.Go(func() {
			if open(base, path).cookie != nil {
				mu.Lock()
				signedIn++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if signedIn != 1 {
		t.Errorf("%d of 6 racing browsers were signed in by one link, want 1", signedIn)
	}
	if v := validKeys(); v[console.LinkKeyName] != 0 || v[console.SessionKeyName] < 2 {
		t.Errorf("valid keys by name after the race: %v; want no link key and the 2 sessions", v)
	}
}

// TestLinkAcrossReplicas: two boxkite servers on one PostgreSQL database;
// a link minted by one opens on the other, once.
func TestLinkAcrossReplicas(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
	}
	a := servertest.New(t, servertest.WithDSN(dsn))
	b := servertest.New(t, servertest.WithDSN(dsn))
	resp, body := apiCall(t, a.BaseURL, a.APIKey, "POST", "/ui/links", nil)
	var link console.LinkResponse
	mustJSON(t, body, &link)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /ui/links: %d %s", resp.StatusCode, body)
	}
	br := newBrowser(t, b.BaseURL)
	if resp, _ := br.do("GET", link.Path, nil, "Origin", ""); br.cookie == nil {
		t.Fatalf("the other replica refused the link: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body = br.do("GET", "/ui/session", nil)
	var info console.SessionInfo
	mustJSON(t, body, &info)
	if resp.StatusCode != http.StatusOK || info.Email != a.Account.Email {
		t.Errorf("session on the other replica: %d %s, want %s", resp.StatusCode, body, a.Account.Email)
	}
	again := newBrowser(t, a.BaseURL)
	again.do("GET", link.Path, nil, "Origin", "")
	if again.cookie != nil {
		t.Error("the link opened again on the replica that minted it")
	}
}

// TestLinkFromOtherSite: a link followed from another site's page (one
// someone minted for their own account and planted there) signs nobody
// in and is left unused, so opened from the address bar it still works;
// the browser's own session is untouched.
func TestLinkFromOtherSite(t *testing.T) {
	srv := servertest.New(t)
	signup(t, srv.BaseURL, "vic@example.com", "correct horse")
	b := newBrowser(t, srv.BaseURL)
	mine := b.signIn("vic@example.com", "correct horse")

	resp, body := apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/ui/links", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /ui/links: %d %s", resp.StatusCode, body)
	}
	var link console.LinkResponse
	mustJSON(t, body, &link)
	for _, site := range []string{"cross-site", "same-site"} {
		resp, _ = b.do("GET", link.Path, nil, "Origin", "", "Sec-Fetch-Site", site)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/signin?link=elsewhere" {
			t.Errorf("link from a %s page: %d to %q, want 303 to the sign-in page", site, resp.StatusCode, resp.Header.Get("Location"))
		}
		_, body = b.do("GET", "/ui/session", nil)
		var info console.SessionInfo
		mustJSON(t, body, &info)
		if info.Email != "vic@example.com" || info.KeyID != mine.KeyID {
			t.Errorf("session after a link from a %s page: %s, want vic's own", site, body)
		}
	}
	owner := newBrowser(t, srv.BaseURL)
	resp, _ = owner.do("GET", link.Path, nil, "Origin", "", "Sec-Fetch-Site", "none")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" || owner.cookie == nil {
		t.Errorf("the same link from the address bar: %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), owner.cookie)
	}
}
