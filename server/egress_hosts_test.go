package server_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestEgressHosts: a sandbox created with egress_hosts by an admin key
// reaches those hosts through the proxy and nothing else (boxkite handoff
// grants an agent its model API so); member keys may not grant them, and
// what is not a host name is refused.
func TestEgressHosts(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from the model API")
	}))
	defer origin.Close()
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())
	s := servertest.New(t, servertest.WithConfig(server.Config{
		EgressResolver:       testResolver{"api.example": "127.0.0.1", "other.example": "127.0.0.1"},
		EgressPermitForTests: server.EgressPermitLoopbackForTests,
	}))
	v := volEnv{re: &realEnv{t: t, s: s}}

	var member api.APIKeyCreated
	v.call("POST", "/v1/api-keys", `{"name":"agent","role":"member"}`, http.StatusCreated, &member)
	resp, body := v.re.do("POST", "/v1/sandboxes", member.Key, strings.NewReader(`{"egress_hosts":["api.example"]}`))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"hint"`) {
		t.Errorf("a member key granting egress_hosts: %d %s, want 403 with a hint", resp.StatusCode, body)
	}
	many, _ := json.Marshal(map[string]any{"egress_hosts": strings.Split(strings.Repeat("h.example,", api.MaxEgressHosts+1), ",")[:api.MaxEgressHosts+1]})
	for _, bad := range []string{`{"egress_hosts":["127.0.0.1"]}`, `{"egress_hosts":["127.1"]}`, `{"egress_hosts":["0x7f000001"]}`, `{"egress_hosts":["a..b"]}`, `{"egress_hosts":["a b"]}`, `{"egress_hosts":["x.example:99999"]}`, string(many)} {
		v.call("POST", "/v1/sandboxes", bad, http.StatusUnprocessableEntity, nil)
	}

	var sb api.Sandbox
	v.call("POST", "/v1/sandboxes", `{"egress_hosts":["api.example:`+port+`"]}`, http.StatusCreated, &sb)
	script := `
import sys, urllib.request, urllib.error
for host in ["api.example", "other.example"]:
    try:
        print(host, "ok", urllib.request.urlopen("http://%s:%s/" % (host, sys.argv[1]), timeout=10).read().decode())
    except urllib.error.HTTPError as e:
        print(host, "refused", e.code)
`
	res := v.exec(sb, "python3 -c "+shellQuote(script)+" "+port)
	if want := "api.example ok hello from the model API\nother.example refused 403\n"; res.Stdout != want {
		t.Errorf("from the sandbox:\n%s(stderr %s)\nwant:\n%s", res.Stdout, res.Stderr, want)
	}
}
