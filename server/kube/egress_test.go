package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testResolver maps test names to fixed addresses.
type testResolver map[string]string

func (m testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

// egressFetch fetches each host through the proxy in the environment
// (urllib honours HTTP_PROXY) and prints one line per attempt.
const egressFetch = `
import sys, urllib.request, urllib.error
for host in sys.argv[2:]:
    try:
        body = urllib.request.urlopen("http://%s:%s/" % (host, sys.argv[1]), timeout=10).read().decode()
        print(host, "ok", body)
    except urllib.error.HTTPError as e:
        print(host, "refused", e.code)
`

// TestEgress is issue 12's egress item: a sandbox granted a host reaches
// it through the control plane's proxy, on a port its NetworkPolicy lets
// it reach and nothing else; a host not granted is refused; a restarted
// server serves the proxy again; a delete closes it.
func TestEgress(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from origin")
	}))
	defer origin.Close()
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())

	e := newEnv(t, kube.Config{EgressHost: "127.0.0.1"})
	e.srvCfg = server.Config{
		MCPCatalog:           map[string]string{"test": "test.example:" + port},
		EgressResolver:       testResolver{"test.example": "127.0.0.1", "other.example": "127.0.0.1"},
		EgressPermitForTests: server.EgressPermitLoopbackForTests,
	}
	e.start(t)
	ctx := context.Background()
	c := e.client()
	if _, err := c.CreateMCPConnection(ctx, api.CreateMCPConnectionRequest{Label: "test-conn", CatalogID: "test"}); err != nil {
		t.Fatal(err)
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{MCPConnectionNames: []string{"test-conn"}})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(hosts ...string) string {
		t.Helper()
		cmd := "python3 -c " + shellQuote(egressFetch) + " " + port + " " + strings.Join(hosts, " ")
		res, err := e.client().Exec(ctx, sb.ID, api.ExecRequest{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout + res.Stderr
	}
	want := "test.example ok hello from origin\nother.example refused 403\n"
	if got := fetch("test.example", "other.example"); got != want {
		t.Errorf("through the proxy:\n%s\nwant:\n%s", got, want)
	}

	pod, err := e.cluster.Client.CoreV1().Pods(e.ns).Get(ctx, "sbx-"+sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := pod.Annotations[kube.AnnotationEgress]
	host, pport, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("egress annotation %q: %v", addr, err)
	}
	np, err := e.cluster.Client.NetworkingV1().NetworkPolicies(e.ns).Get(ctx, "sbx-"+sb.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proxyPort, tcp := intstr.Parse(pport), corev1.ProtocolTCP
	wantRules := []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{{
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "boxkite-server"}},
			NamespaceSelector: &metav1.LabelSelector{},
		}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &proxyPort}},
	}}
	if diff := cmp.Diff(wantRules, np.Spec.Egress); diff != "" {
		t.Errorf("network policy egress (-want +got):\n%s", diff)
	}

	e.restart(t)
	if got := fetch("test.example"); got != "test.example ok hello from origin\n" {
		t.Errorf("after a restart: %q", got)
	}

	if err := e.client().DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	if conn, err := d.DialContext(ctx, "tcp", addr); err == nil {
		conn.Close()
		t.Errorf("the proxy at %s still listens after the delete", addr)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestEgressHosts: egress_hosts (what boxkite handoff grants an agent's
// model API with) reach a kube sandbox the way MCP connections' hosts do.
func TestEgressHosts(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from the model API")
	}))
	defer origin.Close()
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())

	e := newEnv(t, kube.Config{EgressHost: "127.0.0.1"})
	e.srvCfg = server.Config{
		EgressResolver:       testResolver{"api.example": "127.0.0.1", "other.example": "127.0.0.1"},
		EgressPermitForTests: server.EgressPermitLoopbackForTests,
	}
	e.start(t)
	ctx := context.Background()
	sb, err := e.client().CreateSandbox(ctx, api.CreateSandboxRequest{EgressHosts: []string{"api.example:" + port}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := "python3 -c " + shellQuote(egressFetch) + " " + port + " api.example other.example"
	res, err := e.client().Exec(ctx, sb.ID, api.ExecRequest{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if want := "api.example ok hello from the model API\nother.example refused 403\n"; res.Stdout != want {
		t.Errorf("through the proxy:\n%s%s\nwant:\n%s", res.Stdout, res.Stderr, want)
	}
}

// TestEgressWithoutHost: on a server whose kube driver has no egress host
// a create granting egress is refused as not supported (422), not 502
// "retry", and leaves neither a sandbox nor a pod behind.
func TestEgressWithoutHost(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	_, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{EgressHosts: []string{"example.com"}})
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != http.StatusUnprocessableEntity ||
		ae.Code != api.CodeNotSupported || !strings.Contains(ae.Message, "--egress-host") {
		t.Fatalf("create with egress_hosts: %#v, want 422 not_supported naming --egress-host", err)
	}
	if list, err := c.ListSandboxes(ctx, false); err != nil || len(list) != 0 {
		t.Errorf("sandboxes after the refusal: %+v, %v; want none", list, err)
	}
	pods, err := e.cluster.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods after the refusal: %d, %v; want none", len(pods.Items), err)
	}
}

// TestEgressPauseRefused: a sandbox granted egress is not paused on kube
// (docs/snapshots.md): the answer is 422 not_supported saying so, not 502
// "retry", and the sandbox stays active and answers.
func TestEgressPauseRefused(t *testing.T) {
	e := newEnv(t, kube.Config{EgressHost: "127.0.0.1", SnapshotDir: t.TempDir()})
	e.start(t)
	ctx := context.Background()
	c := e.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{EgressHosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PauseSandbox(ctx, sb.ID, api.PauseFilesystem)
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != http.StatusUnprocessableEntity ||
		ae.Code != api.CodeNotSupported || !strings.Contains(ae.Message, "granted egress") {
		t.Fatalf("pause of a sandbox granted egress: %#v, want 422 not_supported", err)
	}
	if got, err := c.Sandbox(ctx, sb.ID); err != nil || got.Status != api.StatusActive {
		t.Errorf("after the refusal: %+v, %v; want active", got, err)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "echo still"}); err != nil || res.Stdout != "still\n" {
		t.Errorf("exec after the refusal: %+v, %v", res, err)
	}
}
