//go:build linux

package sidecar

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

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

// TestRefusedWriteFreesItsSpace: a write refused for a full disk frees
// what it had written before it answers, even while its temp file is
// still open elsewhere, so a write that fits succeeds right after the
// refusal. A command the sidecar forks while a write runs holds a copy of
// every descriptor until it execs; the unlink of the refused write's temp
// file freed its blocks only when that copy went, and a write right after
// the 507 could still find the disk full (TestFullDiskIs507's last upload
// got 507 in a loaded -race run). Here the test holds the temp file open,
// as such a command does, for the whole test.
func TestRefusedWriteFreesItsSpace(t *testing.T) {
	t.Parallel()
	needRoot(t, "mounting a small filesystem")
	ws := mountTmpfs(t, "256k")
	srv, _ := newServer(t, Options{Token: testToken, Workspace: ws})
	pr, pw := io.Pipe()
	defer pr.Close()
	type answer struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/files/raw?path=big.bin", pr)
		if err != nil {
			done <- answer{err: err}
			return
		}
		req.Header = authHeader.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, b, err}
	}()
	chunk := strings.Repeat("x", 64<<10)
	if _, err := io.WriteString(pw, chunk); err != nil {
		t.Fatal(err)
	}
	// Wait for the first chunk to be in the temp file, and hold it.
	var held *os.File
	for held == nil {
		if tmps, _ := filepath.Glob(filepath.Join(ws, tempPattern)); len(tmps) == 1 {
			if fi, err := os.Stat(tmps[0]); err == nil && fi.Size() >= int64(len(chunk)) {
				if held, err = os.Open(tmps[0]); err != nil {
					t.Fatal(err)
				}
				defer held.Close()
			}
		}
		select {
		case a := <-done:
			t.Fatalf("the upload ended before its temp file was held: %d %s %v", a.status, a.body, a.err)
		case <-time.After(time.Millisecond):
		}
	}
	go func() { // the rest, until the sidecar refuses it
		for {
			if _, err := io.WriteString(pw, chunk); err != nil {
				return
			}
		}
	}()
	a := <-done
	pr.CloseWithError(io.ErrClosedPipe) // ends the writer
	if a.err != nil || a.status != http.StatusInsufficientStorage {
		t.Fatalf("upload onto a full disk = %d %s %v, want 507", a.status, a.body, a.err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(ws, tempPattern)); len(tmps) > 0 {
		t.Errorf("temp files left: %v", tmps)
	}
	// Half the disk: it fits only if the refused write's blocks are free.
	if status, body := call(t, http.MethodPut, srv.URL+"/files/raw?path=fits.bin", authHeader, strings.Repeat("y", 128<<10)); status != http.StatusOK {
		t.Errorf("an upload of half the disk after the refusal = %d %s, want 200", status, body)
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
		// The loss shows when the data is written out, before the rename
		// (writeOut): the name never shows the file that was lost.
		if _, err := os.Lstat(filepath.Join(ws, "lost.bin")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: lost.bin exists after the 507 (%v)", tt.name, err)
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

// TestWriteIsOneJournalCommit counts the journal commits of the writes
// onto an ext4 disk like a sandbox's: each raw upload (to a new name in
// new directories, or over a file), file create and str-replace commits
// once, the file's data, its metadata and the rename together, where an
// fsync of the temp file before the rename and of its directory after it
// took two (issue 27, step 62). The filesystem is mounted without a
// periodic commit within the test (commit=600) or the background zeroing
// of inode tables (noinit_itable); a sync(2) of another process can still
// commit a write's transaction midway (two commits then), so a write is
// tried up to ten times (three lost to a `sync` every 0.2 s beside the
// test) and must once commit exactly once, which the two fsyncs never do:
// a foreign commit only adds to a try's count.
func TestWriteIsOneJournalCommit(t *testing.T) {
	t.Parallel()
	needRoot(t, "mounting an ext4 image")
	ws, dev := mountExt4With(t, t.TempDir(), "errors=continue,commit=600,noinit_itable")
	srv, _ := newServer(t, Options{Token: testToken, Workspace: ws})
	commits := journalCommits(t, dev)
	fsrv := fileServer{url: srv.URL}
	upload := func(p, body string) (int, []byte) {
		return call(t, http.MethodPut, srv.URL+"/files/raw?path="+p, authHeader, body)
	}
	const tries = 10
	digits := "0123456789" // str-replace replaces another one at each try
	if status, body := upload("edit.txt", digits); status != http.StatusOK {
		t.Fatalf("upload edit.txt = %d %s", status, body)
	}
	for _, w := range []struct {
		name string
		call func(try int) (int, []byte) // a new write at each try
	}{
		{"raw upload to a new name", func(try int) (int, []byte) {
			return upload(fmt.Sprintf("a%d/b/new.bin", try), strings.Repeat("x", 4<<10))
		}},
		{"raw upload over a file", func(int) (int, []byte) { return upload("edit.txt", digits) }},
		{"file create", func(try int) (int, []byte) {
			return fsrv.post(t, "/file-create", api.FileCreateRequest{Path: fmt.Sprintf("c%d/created.txt", try), Content: "abc"})
		}},
		{"str-replace", func(try int) (int, []byte) {
			return fsrv.post(t, "/str-replace", api.StrReplaceRequest{Path: "edit.txt", OldStr: strconv.Itoa(try), NewStr: "x"})
		}},
	} {
		var got []int
		for try := range tries {
			before := commits()
			if status, body := w.call(try); status != http.StatusOK {
				t.Fatalf("%s = %d %s", w.name, status, body)
			}
			if got = append(got, commits()-before); got[try] == 1 {
				break
			}
		}
		if got[len(got)-1] != 1 {
			t.Errorf("%s: %v journal commits in %d tries, want 1", w.name, got, len(got))
		}
	}
}

// crash stops the ext4 filesystem mounted at dir as a power cut would:
// nothing more reaches its disk, the journal's running transaction
// included (EXT4_IOC_SHUTDOWN, EXT4_GOING_FLAGS_NOLOGFLUSH); then it is
// unmounted.
func crash(t *testing.T, dir string) {
	t.Helper()
	const (
		ext4IocShutdown = 0x8004587d // _IOR('X', 125, __u32)
		noLogFlush      = 0x2
	)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	flags := uint32(noLogFlush)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ext4IocShutdown, uintptr(unsafe.Pointer(&flags)))
	unix.Close(fd)
	if errno != 0 {
		t.Fatalf("shut %s down: %v", dir, errno)
	}
	// A descriptor the sidecar's last request still closes keeps the
	// filesystem busy for a moment; a lazy unmount would leave its
	// superblock, shut down, to the next mount of the device.
	deadline := time.Now().Add(30 * time.Second) // a hang guard only
	for {
		err := unix.Unmount(dir, 0)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			t.Fatalf("unmount %s after the shutdown: %v", dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// journalCommits returns what counts the journal commits of the ext4
// filesystem on dev so far.
func journalCommits(t *testing.T, dev string) func() int {
	info := "/proc/fs/jbd2/" + filepath.Base(dev) + "-8/info" // 8: the journal's inode
	return func() int {
		t.Helper()
		b, err := os.ReadFile(info)
		if err != nil {
			t.Fatalf("read the journal's statistics: %v", err)
		}
		var n int
		if _, err := fmt.Sscanf(string(b), "%d transactions", &n); err != nil {
			t.Fatalf("parse %s: %q: %v", info, b, err)
		}
		return n
	}
}

// syncDir flushes the filesystem holding dir (syncfs).
func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}
