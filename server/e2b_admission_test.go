package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/e2b/envd"
	"github.com/boxkite/boxkite/server/model"
)

// capacityDriver is the fake driver with a host whose limits refuse
// creates while full holds a refusal.
type capacityDriver struct {
	*fakeDriver
	full atomic.Pointer[model.HostLimitError]
}

var _ model.CapacityDriver = (*capacityDriver)(nil)

func (d *capacityDriver) AdmitCreate(context.Context, int) error {
	if e := d.full.Load(); e != nil {
		return e
	}
	return nil
}

func (d *capacityDriver) AdmitWrite(context.Context, string) error { return nil }

func (d *capacityDriver) Capacity(context.Context, []string) (api.HostStatus, error) {
	return api.HostStatus{}, nil
}

// TestE2BCreateAdmitsHost: a create through the E2B facade is admitted
// against the host's limits as POST /v1/sandboxes is (issue 20): while
// the host is full both are refused with the same status and message,
// and the driver is never asked to create; once it has room, both create.
func TestE2BCreateAdmitsHost(t *testing.T) {
	t.Parallel()
	for _, refusal := range []*model.HostLimitError{
		{Resource: "threads", Used: 990, Limit: 1000},
		{Resource: api.HostDiskResource, Free: 1 << 20, Limit: 1 << 30},
	} {
		t.Run(refusal.Resource, func(t *testing.T) {
			t.Parallel()
			var cd *capacityDriver
			e := newEnvWithDriver(t, server.Config{}, openStore(t, t.TempDir()), func(f *fakeDriver) model.Driver {
				cd = &capacityDriver{fakeDriver: f}
				return cd
			})
			e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
			e2bCreate := func() (int, []byte) {
				return e2bsdk.Do(t, e.URL, "POST", "/v2/sandboxes", http.Header{"X-API-Key": {e.KeyA}}, `{"templateID":"base","timeout":600}`)
			}

			cd.full.Store(refusal)
			resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{})
			var rest struct{ Error api.Error }
			mustUnmarshal(t, body, &rest)
			want := refusal.APIError("create")
			if resp.StatusCode != want.Status || rest.Error.Code != want.Code || rest.Error.Message != want.Message {
				t.Fatalf("REST create on a full host = %d %s; want %d %s", resp.StatusCode, body, want.Status, want.Code)
			}
			status, body := e2bCreate()
			var got struct {
				Code    int
				Message string
			}
			mustUnmarshal(t, body, &got)
			// The hint as an E2B user reads it: no boxkite CLI command.
			if wantMsg := rest.Error.Message + " (" + envd.E2BHint(rest.Error.Hint) + ")"; status != resp.StatusCode || got.Code != resp.StatusCode || got.Message != wantMsg {
				t.Errorf("E2B create on a full host = %d %s; want %d with %q", status, body, resp.StatusCode, wantMsg)
			}
			if strings.Contains(got.Message, "boxkite doctor") {
				t.Errorf("E2B create on a full host = %q, names a boxkite CLI command", got.Message)
			}
			if n := len(e.Driver.Created()); n != 0 {
				t.Errorf("the driver created %d sandboxes on a full host", n)
			}

			cd.full.Store(nil)
			if status, body := e2bCreate(); status != http.StatusCreated {
				t.Fatalf("E2B create with room = %d %s", status, body)
			}
			if sb := e.create(e.KeyA, api.CreateSandboxRequest{}); sb.ID == "" {
				t.Fatal("REST create with room returned no sandbox")
			}
		})
	}
}
