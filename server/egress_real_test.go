package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/servertest"
)

// testResolver maps test names to fixed addresses.
type testResolver map[string]string

func (m testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

// egressScript fetches each URL through the proxy in the environment
// (urllib honours HTTP_PROXY), then tunnels with CONNECT by hand, and
// prints one line per attempt.
const egressScript = `
import os, socket, sys, urllib.request, urllib.error
port = sys.argv[1]
for host in ["test.example", "other.example", "meta.example", "lan.example"]:
    try:
        body = urllib.request.urlopen("http://%s:%s/" % (host, port), timeout=10).read().decode()
        print(host, "ok", body)
    except urllib.error.HTTPError as e:
        print(host, "refused", e.code)
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(("CONNECT test.example:%s HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % port).encode())
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print("connect", "ok" if b"hello from origin" in data else data)
print("proxy", os.environ.get("HTTPS_PROXY"))
`

// TestEgressThroughProxy is issue 7 acceptance 3: with a grant for a test
// host served on loopback, a sandbox reaches it through the proxy; a host
// not granted, and granted names that resolve to the metadata address or
// a private one, are refused before any connection, and every decision is
// audited.
func TestEgressThroughProxy(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from origin")
	}))
	defer origin.Close()
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())

	s := servertest.New(t, servertest.WithConfig(server.Config{
		MCPCatalog: map[string]string{
			"test": "test.example:" + port,
			"meta": "meta.example:" + port,
			"lan":  "lan.example:" + port,
		},
		EgressResolver: testResolver{
			"test.example": "127.0.0.1", "other.example": "127.0.0.1",
			"meta.example": "169.254.169.254", "lan.example": "10.0.0.1",
		},
		EgressPermitForTests: server.EgressPermitLoopbackForTests,
	}))
	v := volEnv{re: &realEnv{t: t, s: s}}
	for _, id := range []string{"test", "meta", "lan"} {
		var c api.MCPConnection
		v.call("POST", "/v1/mcp-connections", fmt.Sprintf(`{"label":"%s-conn","catalog_id":%q}`, id, id), http.StatusCreated, &c)
		if c.Host != id+".example:"+port {
			t.Errorf("connection %+v", c)
		}
	}
	v.call("POST", "/v1/mcp-connections", `{"label":"test-conn","catalog_id":"test"}`, http.StatusConflict, nil)
	v.call("POST", "/v1/mcp-connections", `{"label":"x","catalog_id":"nope"}`, http.StatusUnprocessableEntity, nil)
	v.call("POST", "/v1/sandboxes", `{"mcp_connection_names":["missing"]}`, http.StatusNotFound, nil)

	var sb api.Sandbox
	v.call("POST", "/v1/sandboxes", `{"mcp_connection_names":["test-conn","meta-conn","lan-conn"]}`, http.StatusCreated, &sb)
	res := v.exec(sb, "python3 -c "+shellQuote(egressScript)+" "+port)
	want := strings.Join([]string{
		"test.example ok hello from origin",
		"other.example refused 403",
		"meta.example refused 403",
		"lan.example refused 403",
		"connect ok",
		"proxy http://127.0.0.1:3128",
	}, "\n") + "\n"
	if res.ExitCode != 0 || res.Stdout != want {
		t.Fatalf("exec: exit %d\n%s\nstderr: %s\nwant:\n%s", res.ExitCode, res.Stdout, res.Stderr, want)
	}

	var page api.LogPage
	v.call("GET", sandboxPath(sb.ID, "/log")+"?limit=100", "", http.StatusOK, &page)
	type row struct{ Op, Host, Reason string }
	var got []row
	for _, e := range page.Entries {
		if !strings.HasPrefix(e.Operation, "egress_") {
			continue
		}
		var d struct{ Host, Reason string }
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, row{e.Operation, d.Host, d.Reason})
	}
	wantRows := []row{
		{"egress_allow", "test.example", "granted"},
		{"egress_deny", "other.example", "not granted"},
		{"egress_deny", "meta.example", "resolves to a link-local address"},
		{"egress_deny", "lan.example", "resolves to a private address"},
		{"egress_allow", "test.example", "granted"},
	}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Errorf("egress audit (-want +got):\n%s", diff)
	}

	// A restarted server adopts the sandbox and serves its egress again.
	s.Restart(t)
	fetch := `import sys, urllib.request; print(urllib.request.urlopen("http://test.example:%s/" % sys.argv[1], timeout=10).read().decode())`
	if res := v.exec(sb, "python3 -c "+shellQuote(fetch)+" "+port); res.ExitCode != 0 || res.Stdout != "hello from origin\n" {
		t.Errorf("egress after a restart: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	// Without a grant there is no proxy at all.
	plain := v.sandbox(nil)
	if res := v.exec(plain, "env | grep -ci proxy; test -S /run/boxkite/egress.sock; echo $?"); res.Stdout != "0\n1\n" {
		t.Errorf("a sandbox without egress: %q", res.Stdout)
	}

	var conns []api.MCPConnection
	v.call("GET", "/v1/mcp-connections", "", http.StatusOK, &conns)
	if len(conns) != 3 || !slices.ContainsFunc(conns, func(c api.MCPConnection) bool { return c.Label == "lan-conn" }) {
		t.Fatalf("list: %+v", conns)
	}
	v.call("DELETE", "/v1/mcp-connections/"+conns[0].ID, "", http.StatusNoContent, nil)
	v.call("DELETE", "/v1/mcp-connections/"+conns[0].ID, "", http.StatusNotFound, nil)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
