//go:build linux

package local

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/internal/unixsock"
	"github.com/boxkite/boxkite/server/model"
)

// dialCountingClients is a model.SidecarClients whose one client keeps
// its connections alive and counts its dials.
type dialCountingClients struct {
	mu     sync.Mutex
	asked  []model.Endpoint // by Client, token left out
	client *http.Client
	dials  atomic.Int32
}

func (c *dialCountingClients) Client(id string, ep model.Endpoint) (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, model.Endpoint{Network: ep.Network, Address: ep.Address})
	if c.client == nil {
		c.client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c.dials.Add(1)
			return unixsock.Dial(ctx, &net.Dialer{}, ep.Address)
		}}}
	}
	return c.client, nil
}

// TestWarmClaimVia: given the control plane's clients (ClaimWarm's via),
// the claim is sent with the sandbox's own client, whose connection then
// serves the first exec: one dial for both. The pool token no longer
// works; the sandbox's does.
func TestWarmClaimVia(t *testing.T) {
	t.Parallel()
	d := newPoolDriver(t, t.TempDir(), 1)
	member := waitPool(t, d, 1)[0]
	st, err := readState(d.poolDir() + "/" + member)
	if err != nil {
		t.Fatal(err)
	}
	poolToken := st.Token

	via := &dialCountingClients{}
	ep, ok, err := d.ClaimWarm(t.Context(), model.Spec{ID: "via"}, via, nil)
	if !ok || err != nil {
		t.Fatalf("ClaimWarm: ok %v, err %v; want a claim", ok, err)
	}
	t.Cleanup(func() { _ = d.Delete(context.Background(), "via") })
	oneDialServes(t, via, ep, "the claim")
	if got := statusWith(t, ep.Address, poolToken); got != http.StatusUnauthorized {
		t.Errorf("the pool token after the claim: status %d, want %d", got, http.StatusUnauthorized)
	}
}

// oneDialServes checks that via was asked for ep's client alone and
// dialled once, by what, and that this connection serves the first exec.
func oneDialServes(t *testing.T, via *dialCountingClients, ep model.Endpoint, what string) {
	t.Helper()
	want := []model.Endpoint{{Network: "unix", Address: ep.Address}}
	if diff := cmp.Diff(want, via.asked); diff != "" {
		t.Errorf("clients asked for (-want +got):\n%s", diff)
	}
	if n := via.dials.Load(); n != 1 || via.client == nil {
		t.Fatalf("dials by %s: %d, want 1", what, n)
	}
	if res := runWith(t, via.client, ep, "true"); res.ExitCode != 0 {
		t.Fatalf("first exec: %+v", res)
	}
	if n := via.dials.Load(); n != 1 {
		t.Errorf("dials after the first exec: %d, want 1 (%s's connection serves it)", n, what)
	}
}

// TestCreateHealthVia: given the control plane's clients (Spec.Via), a
// cold create asks whether the new sidecar answers with the sandbox's own
// client, whose connection then serves the first exec: one dial for both,
// where the driver's own health check used to dial a connection of its
// own and close it. Without Via, Create asks as before and never calls a
// client.
func TestCreateHealthVia(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	via := &dialCountingClients{}
	ep, err := d.Create(t.Context(), model.Spec{ID: "via", Via: via})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	oneDialServes(t, via, ep, "the health check")
	if _, err := d.Create(t.Context(), model.Spec{ID: "novia"}); err != nil {
		t.Fatalf("Create without Via: %v", err)
	}
	if n := len(via.asked); n != 1 {
		t.Errorf("clients asked %d times after a create without Via; want 1", n)
	}
}

// TestWarmClaimRecord: with a record, ClaimWarm calls it once, after the
// sandbox's state file holds its endpoint, with the control plane's own
// clients (whose transport reports the claim written, so the record runs
// before the answer) and with a client that does not (after it): the
// record's endpoint is the claim's, which the sidecar then honours. A
// record that fails does not fail the claim (its error is the caller's).
func TestWarmClaimRecord(t *testing.T) {
	t.Parallel()
	d := newPoolDriver(t, t.TempDir(), 2)
	for _, tt := range []struct {
		id  string
		via model.SidecarClients
		err error
	}{
		{id: "signalled", via: sidecar.NewClients()},
		{id: "answered", via: &dialCountingClients{}},
		{id: "refused", via: sidecar.NewClients(), err: errors.New("limits taken meanwhile")},
	} {
		waitPool(t, d, 1)
		var got []model.Endpoint
		record := func(ep model.Endpoint) error {
			st, err := readState(d.sandboxDir(tt.id))
			if err != nil || st.Token != ep.Token {
				t.Errorf("%s: state file at the record: token matches %t, err %v; want the endpoint's token", tt.id, st.Token == ep.Token, err)
			}
			got = append(got, ep)
			return tt.err
		}
		ep, ok, err := d.ClaimWarm(t.Context(), model.Spec{ID: tt.id}, tt.via, record)
		if !ok || err != nil {
			t.Fatalf("%s: ClaimWarm: ok %v, err %v; want a claim", tt.id, ok, err)
		}
		t.Cleanup(func() { _ = d.Delete(context.Background(), tt.id) })
		if diff := cmp.Diff([]model.Endpoint{ep}, got); diff != "" {
			t.Errorf("%s: records (-want +got):\n%s", tt.id, diff)
		}
		if status := statusWith(t, ep.Address, ep.Token); status != http.StatusOK {
			t.Errorf("%s: the recorded token after the claim: status %d, want 200", tt.id, status)
		}
	}
}
