package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// The fake driver holds volumes in name only, so the API tests that use
// it (the cross-tenant matrix) can create them.
var _ model.VolumeDriver = (*fakeDriver)(nil)

func (d *fakeDriver) CreateVolume(context.Context, string, int64) error { return nil }

func (d *fakeDriver) DeleteVolume(context.Context, string) error { return nil }

// TestVolumeLimit: an account keeps at most api.DefaultVolumeLimit
// volumes (the reference's 429 volume_limit_reached): each holds a host
// loop device and mount, which every tenant's creates need too. Deleting
// one makes room; another account is not counted against it; creates at
// once do not pass it.
func TestVolumeLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	var wg sync.WaitGroup
	codes := make(chan int, api.DefaultVolumeLimit+5)
	for range api.DefaultVolumeLimit + 5 {
		wg.Go(func() {
			resp, _ := e.do("POST", "/v1/volumes", e.KeyA, `{"label":"v"}`)
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	counts := map[int]int{}
	for c := range codes {
		counts[c]++
	}
	if counts[http.StatusCreated] != api.DefaultVolumeLimit || counts[http.StatusTooManyRequests] != 5 {
		t.Fatalf("%d creates at once answered %v; want %d 201 and 5 429", api.DefaultVolumeLimit+5, counts, api.DefaultVolumeLimit)
	}
	resp, body := e.do("POST", "/v1/volumes", e.KeyA, `{}`)
	ae := wantError(t, resp, body, http.StatusTooManyRequests, api.CodeVolumeLimitReached)
	details, _ := ae.Details.(map[string]any)
	if ae.Hint == "" || details["limit"] != float64(api.DefaultVolumeLimit) || details["count"] != float64(api.DefaultVolumeLimit) {
		t.Errorf("the refusal: %s", body)
	}
	if resp, body := e.do("POST", "/v1/volumes", e.KeyB, `{}`); resp.StatusCode != http.StatusCreated {
		t.Errorf("another account's create: %d %s", resp.StatusCode, body)
	}
	var vs []api.Volume
	_, body = e.do("GET", "/v1/volumes", e.KeyA, nil)
	mustUnmarshal(t, body, &vs)
	if resp, body := e.do("DELETE", "/v1/volumes/"+vs[0].ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("POST", "/v1/volumes", e.KeyA, `{}`); resp.StatusCode != http.StatusCreated {
		t.Errorf("a create after a delete: %d %s", resp.StatusCode, body)
	}
}
