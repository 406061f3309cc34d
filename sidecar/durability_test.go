//go:build linux

package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// TestFullDiskIs507 fills the workspace and checks that every writing
// route answers 507 insufficient_storage with a hint, leaves neither the
// file nor a temp file behind, and that a write which fits still works.
func TestFullDiskIs507(t *testing.T) {
	t.Parallel()
	needRoot(t, "mounting a small filesystem")
	ws := mountTmpfs(t, "256k")
	srv, _ := newServer(t, Options{Token: testToken, Workspace: ws})
	big := strings.Repeat("x", 1<<20)
	writeFile(t, ws+"/small.txt", "abc", 0o644)
	post := func(route string, req any) (int, []byte) {
		return fileServer{url: srv.URL}.post(t, route, req)
	}
	tests := []struct {
		name string
		call func() (int, []byte)
	}{
		{"raw upload", func() (int, []byte) {
			return call(t, http.MethodPut, srv.URL+"/files/raw?path=big.bin", authHeader, big)
		}},
		{"file create", func() (int, []byte) {
			return post("/file-create", api.FileCreateRequest{Path: "big.txt", Content: big})
		}},
		{"str-replace", func() (int, []byte) {
			return post("/str-replace", api.StrReplaceRequest{Path: "small.txt", OldStr: "b", NewStr: big})
		}},
		{"archive", func() (int, []byte) {
			return call(t, http.MethodPost, srv.URL+"/files/archive?path=arc", authHeader, string(tarOf(t, tarEntry{name: "big", body: big})))
		}},
	}
	for _, tt := range tests {
		status, body := tt.call()
		if status != http.StatusInsufficientStorage {
			t.Errorf("%s on a full disk = %d %s, want 507", tt.name, status, body)
			continue
		}
		if e := decodeError(t, body); e.Code != api.CodeInsufficientStorage || e.Hint == "" || !strings.Contains(e.Message, "no space left on device") {
			t.Errorf("%s on a full disk: %+v, want insufficient_storage with a hint naming ENOSPC", tt.name, e)
		}
	}
	if got := readFile(t, ws+"/small.txt"); got != "abc" {
		t.Errorf("small.txt = %q after a failed edit, want it unchanged", got)
	}
	for _, p := range []string{"big.bin", "big.txt", "arc/big"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a refused write (%v)", p, err)
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(ws, "*", tempPattern)); len(tmps) > 0 {
		t.Errorf("temp files left: %v", tmps)
	}
	if tmps, _ := filepath.Glob(filepath.Join(ws, tempPattern)); len(tmps) > 0 {
		t.Errorf("temp files left: %v", tmps)
	}
	if status, body := call(t, http.MethodPut, srv.URL+"/files/raw?path=fits.txt", authHeader, "fits"); status != http.StatusOK {
		t.Errorf("a small upload after the refusals = %d %s", status, body)
	}
}

// TestWriteLostOnTheHostIs507 writes into a filesystem whose host cannot
// store what it accepts: without the fsync before the answer, the upload
// would be acknowledged and lost; with it, the loss is a 507.
func TestWriteLostOnTheHostIs507(t *testing.T) {
	t.Parallel()
	needRoot(t, "mounting a small filesystem")
	payload := strings.Repeat("0123456789abcdef", 4<<20) // 64 MiB: room inside, none on the host
	for _, tt := range []struct{ name, method, url, body string }{
		{"raw upload", http.MethodPut, "/files/raw?path=lost.bin", payload},
		{"archive", http.MethodPost, "/files/archive?path=arc", string(tarOf(t, tarEntry{name: "lost", body: payload}))},
	} {
		ws := mountOnFullHost(t, "24m") // one each: the first failure may leave the filesystem read-only
		srv, _ := newServer(t, Options{Token: testToken, Workspace: ws})
		status, body := call(t, tt.method, srv.URL+tt.url, authHeader, tt.body)
		if status != http.StatusInsufficientStorage {
			t.Errorf("%s of 64 MiB onto a host with 24 MiB = %d %s, want 507", tt.name, status, body)
			continue
		}
		if e := decodeError(t, body); e.Code != api.CodeInsufficientStorage {
			t.Errorf("%s: %+v, want insufficient_storage", tt.name, e)
		}
	}
}

// TestStorageErrors maps the errors a write can meet.
func TestStorageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err        error
		verb       string
		wantStatus int // 0: not an API error
		wantCode   string
	}{
		{fmt.Errorf("write: %w", unix.ENOSPC), "write to", 507, api.CodeInsufficientStorage},
		{&fs.PathError{Op: "fsync", Path: "x", Err: unix.EDQUOT}, "write to", 507, api.CodeInsufficientStorage},
		{fmt.Errorf("sync: %w", unix.EIO), "write to", 507, api.CodeInsufficientStorage},
		{fmt.Errorf("create directory d: %w", unix.ENOSPC), "create directory", 507, api.CodeInsufficientStorage},
		{unix.EIO, "read", 0, ""}, // a failing disk, not a full one
		{unix.EACCES, "write to", 403, api.CodePermissionDenied},
		{unix.EPERM, "read", 403, api.CodePermissionDenied},
		{fmt.Errorf("write: %w", unix.EROFS), "write to", 507, api.CodeInsufficientStorage}, // the journal gave up
		{unix.EROFS, "read", 0, ""},
	}
	for _, tt := range tests {
		err := fileError(tt.err, tt.verb, "/workspace/f")
		e, ok := errors.AsType[*api.Error](err)
		switch {
		case tt.wantStatus == 0 && ok:
			t.Errorf("fileError(%v, %q) = %+v, want an internal error", tt.err, tt.verb, e)
		case tt.wantStatus != 0 && (!ok || e.Status != tt.wantStatus || e.Code != tt.wantCode || e.Hint == ""):
			t.Errorf("fileError(%v, %q) = %v, want %d %s with a hint", tt.err, tt.verb, err, tt.wantStatus, tt.wantCode)
		}
	}
}
