//go:build linux

package sidecar

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// hostFlushHeader is what the control plane sends on a file write whose
// disk it flushes itself (api.HeaderSidecarHostFlush).
var hostFlushHeader = http.Header{api.HeaderSidecarToken: {testToken}, api.HeaderSidecarHostFlush: {"1"}}

// crashWrites makes the writes of the crash tests through the sidecar at
// url, with header h, over ws (which holds over.bin, "old"), and returns
// what each file holds once they are done.
func crashWrites(t *testing.T, url string, h http.Header) map[string]string {
	t.Helper()
	want := map[string]string{
		"a/b/new.bin":   strings.Repeat("n", 5000),
		"over.bin":      strings.Repeat("2", 4<<10),
		"c/created.txt": "aBc",
	}
	for _, p := range []string{"a/b/new.bin", "over.bin"} {
		if status, body := call(t, http.MethodPut, url+"/files/raw?path="+p, h, want[p]); status != http.StatusOK {
			t.Fatalf("upload %s = %d %s", p, status, body)
		}
	}
	post := func(route, body string) {
		t.Helper()
		if status, b := call(t, http.MethodPost, url+route, h, body); status != http.StatusOK {
			t.Fatalf("%s = %d %s", route, status, b)
		}
	}
	post("/file-create", `{"path":"c/created.txt","content":"abc"}`)
	post("/str-replace", `{"path":"c/created.txt","old_str":"b","new_str":"B"}`)
	return want
}

// TestAcknowledgedWriteSurvivesACrash writes files onto an ext4 disk,
// then stops the filesystem as a power cut would (EXT4_IOC_SHUTDOWN
// without flushing the journal) and mounts it again: every write that
// was acknowledged is there whole, with its directories, and no temp
// file is left. Acknowledged is the sidecar's 200 when it flushes the
// write itself (step 62: one journal commit after the rename), or, when
// the control plane flushes the disk (api.HeaderSidecarHostFlush, step
// 63), the 200 followed by that flush: the syncfs of a descriptor opened
// before the writes, as server/local's SyncDisk, which the server's
// answer waits for.
func TestAcknowledgedWriteSurvivesACrash(t *testing.T) {
	t.Parallel()
	needRoot(t, "mounting an ext4 image")
	for _, c := range []struct {
		name   string
		header http.Header
	}{
		{"the sidecar flushes", authHeader},
		{"the host flushes", hostFlushHeader},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			temps := crashTest(t, c.header, func(t *testing.T, disk int) {
				if c.header[api.HeaderSidecarHostFlush] == nil {
					return
				}
				if err := unix.Syncfs(disk); err != nil {
					t.Fatalf("flush the disk as the host does: %v", err)
				}
			}, func(t *testing.T, p, got, want string) {
				if got != want {
					t.Errorf("after the crash %s = %d bytes, want the %d acknowledged", p, len(got), len(want))
				}
			})
			if len(temps) > 0 {
				t.Errorf("temp files after the crash: %v", temps)
			}
		})
	}
}

// TestUnacknowledgedWriteIsWholeOrAbsent: a write the host was to flush
// but a crash stopped before (the sidecar answered, the host's flush did
// not run) leaves each name on its old file or on the whole new one,
// never on a file whose data is missing: the sidecar writes the data out
// before the rename, and ordered journalling commits the rename no
// earlier than the data's allocation. A temp file may be left: any
// journal commit between its creation and its rename keeps it across the
// crash, and a sync(2) of any process on the host (CI's other tests, a
// sandbox's sync) commits every filesystem; the sidecar itself commits
// nothing here (TestHostFlushedWriteIsOneJournalCommit).
func TestUnacknowledgedWriteIsWholeOrAbsent(t *testing.T) {
	t.Parallel()
	needRoot(t, "mounting an ext4 image")
	crashTest(t, hostFlushHeader, func(*testing.T, int) {}, func(t *testing.T, p, got, want string) {
		switch {
		case got == want:
		case p == "over.bin" && got == "old":
		case p == "c/created.txt" && got == "abc": // the create's commit, not the replace's
		case got == "" && p != "over.bin":
			// a new name a crash lost whole (crashTest reads a missing file as "")
		default:
			t.Errorf("after the crash %s = %q, want the old file, the whole new one or none", p, got)
		}
	})
}

// crashTest makes crashWrites with header h on a fresh ext4 disk, runs
// ack with a descriptor of the disk opened before them, crashes the disk
// (crash), mounts it again and checks each file with check (a missing
// file reads ""). It returns the temp files left.
//
// The disk is mounted again through another loop device: a mount
// namespace another process copied meanwhile (a jail of a parallel test,
// a sandbox) still holds the first mount, and with it the superblock
// the crash shut down, which a mount of the same device would get back,
// every read failing with EIO.
func crashTest(t *testing.T, h http.Header, ack func(t *testing.T, disk int), check func(t *testing.T, p, got, want string)) (temps []string) {
	const opts = "errors=continue,commit=600,noinit_itable" // no commit but the writes' own
	host := t.TempDir()
	ws, dev := mountExt4With(t, host, opts)
	srv, _ := newServer(t, Options{Token: testToken, Workspace: ws})
	writeFile(t, ws+"/over.bin", "old", 0o644)
	if err := syncDir(ws); err != nil { // the old version is on the disk before the test's writes
		t.Fatal(err)
	}
	disk, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := crashWrites(t, srv.URL, h)
	ack(t, disk)
	unix.Close(disk)
	crash(t, ws)
	again, dev2 := t.TempDir(), attachLoop(t, filepath.Join(host, "disk.img"))
	if err := unix.Mount(dev2, again, "ext4", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Fatalf("mount %s's disk again on %s: %v", dev, dev2, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(again, unix.MNT_DETACH) })
	for _, p := range slices.Sorted(maps.Keys(want)) {
		got, err := os.ReadFile(filepath.Join(again, p))
		if err != nil && !os.IsNotExist(err) {
			t.Errorf("after the crash: read %s: %v", p, err)
		}
		check(t, p, string(got), want[p])
	}
	for _, dir := range []string{".", "a/b", "c"} {
		tmps, _ := filepath.Glob(filepath.Join(again, dir, tempPattern))
		temps = append(temps, tmps...)
	}
	return temps
}

// TestHostFlushedWriteIsOneJournalCommit: a file write whose disk the
// host flushes commits nothing in the sidecar, and the host's flush
// (syncfs) then commits it once: the data, the metadata and the rename
// in one journal commit, which the server runs beside the audit entry's
// (issue 27, step 63). As in TestWriteIsOneJournalCommit, a foreign
// sync(2) can only add commits, so a write is tried up to ten times and
// must once count exactly 0 then 1.
func TestHostFlushedWriteIsOneJournalCommit(t *testing.T) {
	t.Parallel()
	needRoot(t, "mounting an ext4 image")
	ws, dev := mountExt4With(t, t.TempDir(), "errors=continue,commit=600,noinit_itable")
	srv, _ := newServer(t, Options{Token: testToken, Workspace: ws})
	commits := journalCommits(t, dev)
	disk, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(disk)
	digits := "0123456789"
	if status, body := call(t, http.MethodPut, srv.URL+"/files/raw?path=edit.txt", authHeader, digits); status != http.StatusOK {
		t.Fatalf("upload edit.txt = %d %s", status, body)
	}
	for _, w := range []struct{ name, method, route, body string }{
		{"raw upload to a new name", http.MethodPut, "/files/raw?path=a%d/b/new.bin", strings.Repeat("x", 4<<10)},
		{"raw upload over a file", http.MethodPut, "/files/raw?path=edit.txt", digits},
		{"file create", http.MethodPost, "/file-create", `{"path":"c%d/created.txt","content":"abc"}`},
		{"str-replace", http.MethodPost, "/str-replace", `{"path":"edit.txt","old_str":"%d","new_str":"x"}`},
	} {
		var got [][2]int
		for try := range 10 {
			route, body := w.route, w.body
			if strings.Contains(route, "%d") {
				route = fmt.Sprintf(route, try)
			}
			if strings.Contains(body, "%d") {
				body = strings.ReplaceAll(body, "%d", strconv.Itoa(try))
			}
			before := commits()
			if status, b := call(t, w.method, srv.URL+route, hostFlushHeader, body); status != http.StatusOK {
				t.Fatalf("%s = %d %s", w.name, status, b)
			}
			written := commits()
			if err := unix.Syncfs(disk); err != nil {
				t.Fatal(err)
			}
			got = append(got, [2]int{written - before, commits() - written})
			if got[try] == [2]int{0, 1} {
				break
			}
		}
		if got[len(got)-1] != [2]int{0, 1} {
			t.Errorf("%s: journal commits (the sidecar's, the host's flush's) in %d tries: %v, want [0 1]", w.name, len(got), got)
		}
	}
}
