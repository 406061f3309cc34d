package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestUploadDeclaresItsSize: 'files cp FILE :DST' sends the file's size as
// Content-Length, so that a server below its free-space watermark refuses
// an upload it has no room for (507) before a byte is written
// (docs/local-mode.md); stdin, whose size is not known, goes chunked.
// Before, every upload went chunked, and a 200 MiB file was acknowledged
// on a host it took below the watermark.
func TestUploadDeclaresItsSize(t *testing.T) {
	var f fakeSandbox
	var got []int64
	f.serve(t, map[string]http.HandlerFunc{
		"PUT /files/raw": func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.ContentLength)
			replyJSON(200, api.FileWriteResult{Path: r.URL.Query().Get("path"), Size: 3})(w, r)
		},
		"POST /files/ls": replyJSON(200, api.LsResult{}),
	})
	src := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(src, []byte(strings.Repeat("z", 12345)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "files", "cp", src, ":/workspace/f.bin"); r.code != 0 {
		t.Fatalf("files cp FILE: %+v", r)
	}
	if r := runCLI(t, "from stdin", "files", "cp", "-", ":/workspace/g.bin"); r.code != 0 {
		t.Fatalf("files cp -: %+v", r)
	}
	if want := []int64{12345, -1}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Content-Length of the uploads = %v, want %v (the file's size; unknown for stdin)", got, want)
	}
}

// TestUploadOfProcFile: a /proc file says its size is 0 and holds more;
// it goes chunked, whole.
func TestUploadOfProcFile(t *testing.T) {
	var f fakeSandbox
	f.serve(t, map[string]http.HandlerFunc{
		"PUT /files/raw": replyJSON(200, api.FileWriteResult{Path: "/workspace/status", Size: 1}),
		"POST /files/ls": replyJSON(200, api.LsResult{}),
	})
	if r := runCLI(t, "", "files", "cp", "/proc/self/status", ":/workspace/status"); r.code != 0 {
		t.Fatalf("files cp /proc/self/status: %+v", r)
	}
	// fakeSandbox records each call with its body.
	if len(f.calls) != 2 || !strings.Contains(f.calls[1], "Pid:") {
		t.Errorf("calls %q, want an upload of the file's text", f.calls)
	}
}
