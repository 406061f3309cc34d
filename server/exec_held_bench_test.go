package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// BenchmarkJSONExecHeld measures what the control plane allocates for one
// JSON exec whose answer carries 16 MiB of stdout (issue 27, session 22):
// its B/op, divided by the output, is about how many copies of the answer
// the server keeps while it holds it (hold.Copies).
func BenchmarkJSONExecHeld(b *testing.B) {
	// plain has no escapes in its JSON; lines, the usual output, has one
	// newline every 80 bytes.
	b.Run("plain", func(b *testing.B) { benchJSONExecHeld(b, bytes.Repeat([]byte("x"), 16<<20)) })
	b.Run("lines", func(b *testing.B) {
		benchJSONExecHeld(b, bytes.Repeat([]byte(strings.Repeat("x", 79)+"\n"), 16<<20/80))
	})
}

func benchJSONExecHeld(b *testing.B, stdout []byte) {
	size := len(stdout)
	e := newEnv(b, server.Config{RateLimits: server.RateLimits{Ops: -1}})
	e.Sidecar.ExecFunc = execAnswer(b, api.ExecResult{Stdout: string(stdout), DurationMS: 1})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	body := []byte(`{"command":"x","max_output_bytes":` + strconv.Itoa(size) + `}`)
	url := e.URL + sandboxPath(sb.ID, "/exec")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	ctx := context.Background()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < int64(size) {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}
