package servertest_test

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestWarmClaimRefusedCrash closes the window session 12 left open
// (bench/issue27/session12-warm12.md §2, session13-warm13.md): a warm
// create commits its row, with the claimed token, while the member's
// sidecar answers the claim; if the sidecar refuses the claim (it was
// used already) and the control plane dies before it deletes the
// sandbox, the row names a sidecar that kept the pool's token. The
// restart must not adopt it (every call with the row's token would get
// 401): it marks the sandbox lost and the driver deletes it. On SQLite
// and on Postgres.
func TestWarmClaimRefusedCrash(t *testing.T) {
	needRoot(t)
	onEachStore(t, 1, testWarmClaimRefusedCrash)
}

func testWarmClaimRefusedCrash(t *testing.T, s *servertest.Server) {
	ctx := context.Background()
	waitWarm(t, s)
	useMember(t, s) // so that its sidecar refuses the claim
	refused := model.NewID()
	dieAtRecord(t, s, refused, true)

	s.Restart(t)

	row, err := s.Store.Sandbox(ctx, s.Account.ID, refused)
	if err != nil {
		t.Fatalf("row of the sandbox whose claim was refused: %v", err)
	}
	if row.Status != api.StatusLost {
		t.Errorf("row of the sandbox whose claim was refused, after the restart: %s, want %s (its sidecar refuses the row's token)",
			row.Status, api.StatusLost)
	}
	checkDeleted(t, s, refused, "the sandbox whose claim was refused")
}

// useMember makes one authorized request of the pool's one ready member
// with the pool's token (from its state file), which its sidecar counts
// as a use: it refuses to be claimed from then on.
func useMember(t *testing.T, s *servertest.Server) {
	t.Helper()
	st := readPoolMember(t, s)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", st.Socket)
	}}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://sidecar/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, st.Token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics of the pool's member with its token: %s", resp.Status)
	}
}
