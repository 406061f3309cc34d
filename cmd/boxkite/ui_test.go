//go:build linux

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// testUI (issue 29): the link `boxkite ui` prints signs a browser in to
// the console of the server `boxkite up` started, once.
func testUI(t *testing.T, s *localServer) {
	var link struct{ URL string }
	if err := json.Unmarshal([]byte(s.mustRun(t, "ui", "--json")), &link); err != nil || !strings.HasPrefix(link.URL, s.baseURL+"/ui/link/") {
		t.Fatalf("ui --json: %+v, %v", link, err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "boxkite_console" {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" || cookie == nil || !cookie.HttpOnly {
		t.Fatalf("open the link: %d to %q, cookie %+v", resp.StatusCode, resp.Header.Get("Location"), cookie)
	}
	req, _ := http.NewRequest("GET", s.baseURL+"/ui/session", nil)
	req.AddCookie(cookie)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"email":"local@localhost"`) {
		t.Fatalf("session after the link: %d %s", resp.StatusCode, body)
	}
	// Once only.
	resp, err = noRedirect.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Location") != "/ui/signin?link=expired" {
		t.Errorf("the link opened twice: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
