package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkWarmCreateProxy measures the control plane's part of a create
// served from the warm pool (issue 27, acceptance 1b): the request, auth,
// limits, the claim over the sandbox's sidecar client (here a GET
// /health of the fake sidecar) and the row's commit on SQLite, with a
// fake driver whose pool never runs dry. The sandbox is deleted after
// each create, untimed.
func BenchmarkWarmCreateProxy(b *testing.B) {
	var wd *warmDriver
	e := newEnvWithDriver(b, server.Config{RateLimits: server.RateLimits{Lifecycle: -1, Ops: -1}}, openStore(b, b.TempDir()), func(f *fakeDriver) model.Driver {
		wd = &warmDriver{fakeDriver: f, ready: 1 << 30}
		return wd
	})
	wd.ep = e.Sidecar.Endpoint
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	ctx := context.Background()
	do := func(method, url string, body []byte) []byte {
		req, _ := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, out)
		}
		return out
	}
	for b.Loop() {
		out := do("POST", e.URL+"/v1/sandboxes", []byte(`{}`))
		b.StopTimer()
		var sb api.Sandbox
		if err := json.Unmarshal(out, &sb); err != nil {
			b.Fatal(err)
		}
		do("DELETE", e.URL+"/v1/sandboxes/"+sb.ID, nil)
		b.StartTimer()
	}
}
