package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// BenchmarkFilesProxy is one write and one read of a 4 KiB file through
// the control plane (PUT then GET /files/raw: auth, sandbox lookup, the
// write admission, the proxy, two audit appends) to a fake sidecar that
// keeps the file in memory: the control plane's share of issue 27's
// small-file round trip, without the sandbox disk's flushes.
func BenchmarkFilesProxy(b *testing.B) {
	e := newEnv(b, server.Config{RateLimits: server.RateLimits{Ops: -1}}) // b.Loop runs past any per-minute limit
	var (
		mu   sync.Mutex
		file []byte
	)
	e.Sidecar.Route("PUT /files/raw", func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		file = data
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.FileWriteResult{Path: r.URL.Query().Get("path"), Size: int64(len(data))})
	})
	e.Sidecar.Route("GET /files/raw", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		data := file
		mu.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	data := bytes.Repeat([]byte("x"), 4<<10)
	u := e.URL + sandboxPath(sb.ID, "/files/raw") + "?" + url.Values{"path": {"/workspace/bench-4k.bin"}}.Encode()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	ctx := context.Background()
	call := func(method string, body io.Reader) []byte {
		req, _ := http.NewRequestWithContext(ctx, method, u, body)
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d %s", method, resp.StatusCode, got)
		}
		return got
	}
	for b.Loop() {
		// As the client's UploadFile sends it: chunked, length unknown.
		call(http.MethodPut, struct{ io.Reader }{bytes.NewReader(data)})
		if got := call(http.MethodGet, nil); len(got) != len(data) {
			b.Fatalf("read %d bytes, want %d", len(got), len(data))
		}
	}
}
