package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestChunkedUploadGetsALength: an upload sent chunked (the Go client's
// UploadFile, `curl -T -`) that fits the sidecar client's lean path reaches
// the sidecar with its length, not chunked; a longer one streams on
// chunked. Either way the sidecar gets every byte, and the audit entry
// counts them.
func TestChunkedUploadGetsALength(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	type seen struct {
		Length  int64
		Chunked bool
		Body    []byte
	}
	got := make(chan seen, 1)
	e.Sidecar.Route("PUT /files/raw", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- seen{Length: r.ContentLength, Chunked: len(r.TransferEncoding) > 0, Body: body}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"path":"/workspace/a","size":`+strconv.Itoa(len(body))+`}`)
	})
	u := e.URL + sandboxPath(sb.ID, "/files/raw") + "?" + url.Values{"path": {"a"}}.Encode()
	var sizes []float64
	for _, tc := range []struct {
		name    string
		size    int
		length  int64
		chunked bool
	}{
		{"empty", 0, 0, false},
		{"4 KiB", 4 << 10, 4 << 10, false},
		{"64 KiB", 64 << 10, 64 << 10, false},
		{"64 KiB and a byte", 64<<10 + 1, -1, true},
		{"1 MiB", 1 << 20, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sizes = append(sizes, float64(tc.size))
			data := make([]byte, tc.size)
			for i := range data {
				data[i] = byte(i * 7)
			}
			// struct{io.Reader} hides the length: net/http sends it chunked.
			req, _ := http.NewRequest(http.MethodPut, u, struct{ io.Reader }{bytes.NewReader(data)})
			req.Header.Set("Authorization", "Bearer "+e.KeyA)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("upload = %d %s", resp.StatusCode, answer)
			}
			s := <-got
			if s.Length != tc.length || s.Chunked != tc.chunked {
				t.Errorf("the sidecar saw length %d chunked %v, want %d %v", s.Length, s.Chunked, tc.length, tc.chunked)
			}
			if !bytes.Equal(s.Body, data) {
				t.Errorf("the sidecar got %d bytes, not the %d sent", len(s.Body), len(data))
			}
		})
	}
	resp, body := e.do("GET", sandboxPath(sb.ID, "/log?limit=500"), e.KeyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET log: %d %s", resp.StatusCode, body)
	}
	var page api.LogPage
	mustUnmarshal(t, body, &page)
	var logged []float64
	for _, en := range page.Entries {
		if en.Operation == "file_upload" {
			var d map[string]any
			mustUnmarshal(t, en.Detail, &d)
			logged = append(logged, d["bytes"].(float64))
		}
	}
	if diff := cmp.Diff(sizes, logged); diff != "" {
		t.Errorf("bytes of the file_upload entries (-sent +logged):\n%s", diff)
	}
}
