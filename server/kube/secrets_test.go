package kube_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/kube"
	"github.com/boxkite/boxkite/server/secrets"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// TestSecretsOnKube is docs/secrets.md on the kube driver: a sandbox pod
// created with a secret gets its value in one exec's environment
// (secret_env, with --allow-secret-env), the exec's answer redacted; the
// http-request broker sends it from the server to an allowed host; a
// secret the sandbox was not created with is refused; a fork inherits
// the grant. The value never reaches the pod otherwise: not its spec, its
// Secret nor its environment.
func TestSecretsOnKube(t *testing.T) {
	var got []string // the Authorization headers the upstream saw
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		fmt.Fprintf(w, "echo %s", r.Header.Get("Authorization"))
	}))
	t.Cleanup(up.Close)
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())

	e := newEnv(t, kube.Config{SnapshotDir: t.TempDir()})
	e.srvCfg.SecretEnv = true
	e.secrets = func(st *sqlstore.Store) *secrets.Service {
		kr, err := secrets.ParseKeyring(secrets.NewKey())
		if err != nil {
			t.Fatal(err)
		}
		return secrets.New(st, secrets.Config{
			Keyring: kr, PermitForTests: server.EgressPermitLoopbackForTests, RootCAsForTests: roots,
			// A secret goes to port 443 only: this test's upstream stands in there.
			DialForTests: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr != "127.0.0.1:443" {
					return nil, fmt.Errorf("the test dials 127.0.0.1:443 only, not %s", addr)
				}
				var d net.Dialer
				return d.DialContext(ctx, network, up.Listener.Addr().String())
			},
		})
	}
	e.start(t)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const value = "sv_kube_5c1e8a0b9d2f4763"
	for _, name := range []string{"SERVICE_TOKEN", "OTHER"} {
		if _, err := c.CreateSecret(ctx, api.CreateSecretRequest{Name: name, Value: value + name, AllowedHosts: []string{"127.0.0.1"}}); err != nil {
			t.Fatalf("create secret %s: %v", name, err)
		}
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{SecretNames: []string{"SERVICE_TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	want := value + "SERVICE_TOKEN"

	// secret_env: the value is in the command's environment in the pod,
	// and redacted from what comes back.
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{
		Command:   `test "$TOKEN" = '` + want + `' && echo matched; echo "token=$TOKEN"`,
		SecretEnv: map[string]string{"TOKEN": "SERVICE_TOKEN"}, Timeout: 60,
	})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "matched") ||
		!strings.Contains(res.Stdout, "token=[REDACTED_SECRET:SERVICE_TOKEN]") || strings.Contains(res.Stdout, want) {
		t.Errorf("exec with secret_env: %+v, %v", res, err)
	}
	// Without secret_env the pod has no trace of it.
	if out := mustExec(t, c, sb.ID, `env; cat /proc/self/environ | tr '\0' '\n'; grep -rl "`+want+`" /etc/boxkite /workspace /tmp 2>/dev/null; true`); strings.Contains(out, want) || strings.Contains(out, "REDACTED") {
		t.Errorf("the pod holds the value outside secret_env: %q", out)
	}

	// The broker: the request leaves from the server with the value.
	hr, err := c.HTTPRequest(ctx, sb.ID, api.HTTPRequest{
		Method: "GET", URL: "https://127.0.0.1/x", Headers: map[string]string{"Authorization": "Bearer {{secret:SERVICE_TOKEN}}"},
	})
	if err != nil || hr.StatusCode != 200 || strings.Contains(hr.Body, want) || len(got) != 1 || got[0] != "Bearer "+want {
		t.Errorf("http-request: %+v, %v; the upstream saw %q", hr, err, got)
	}
	// A secret the sandbox was not created with.
	_, err = c.HTTPRequest(ctx, sb.ID, api.HTTPRequest{
		Method: "GET", URL: "https://127.0.0.1/x", Headers: map[string]string{"Authorization": "Bearer {{secret:OTHER}}"},
	})
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Code != api.CodeSecretNotReferenced {
		t.Errorf("http-request with a secret not granted: %v, want %s", err, api.CodeSecretNotReferenced)
	}

	// A fork is granted what its parent holds.
	forks, err := c.ForkSandbox(ctx, sb.ID, 1)
	if err != nil || len(forks) != 1 {
		t.Fatalf("fork: %+v, %v", forks, err)
	}
	res, err = c.Exec(ctx, forks[0].ID, api.ExecRequest{
		Command: `test "$TOKEN" = '` + want + `' && echo matched`, SecretEnv: map[string]string{"TOKEN": "SERVICE_TOKEN"}, Timeout: 60,
	})
	if err != nil || !strings.Contains(res.Stdout, "matched") {
		t.Errorf("secret_env in the fork: %+v, %v", res, err)
	}
}
