package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxkite/boxkite/client/api"
)

// watchAfter starts a watch, runs act once an inotify watch on the host
// directory armed exists, and returns the result.
func watchAfter(t *testing.T, fs fileServer, req api.WatchRequest, armed string, act func()) api.WatchResult {
	t.Helper()
	done := make(chan api.WatchResult, 1)
	go func() { done <- postOK[api.WatchResult](t, fs, "/watch", req) }()
	waitWatched(t, armed)
	act()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not return")
	}
	return api.WatchResult{}
}

// waitWatched waits until an inotify instance of this process watches dir:
// the sidecar under test runs in it, and /proc/self/fdinfo lists the inode
// of every watch.
func waitWatched(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" ino:%x ", fi.Sys().(*syscall.Stat_t).Ino)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		fds, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink("/proc/self/fd/" + fd.Name()); l != "anon_inode:inotify" {
				continue
			}
			info, _ := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
			if strings.Contains(string(info), want) {
				return
			}
		}
	}
	t.Fatalf("no inotify watch on %s", dir)
}

func TestWatch(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	writeFile(t, fs.ws+"/existing.txt", "x", 0o644)
	writeFile(t, fs.ws+"/sub/deep/inner.txt", "x", 0o644)
	ch := func(p, ev string) api.WatchChange { return api.WatchChange{Path: p, Event: ev} }
	tests := []struct {
		name  string
		req   api.WatchRequest
		armed string // the host directory watched last
		act   func()
		want  []api.WatchChange
	}{
		{
			"created",
			api.WatchRequest{Path: "/", TimeoutSeconds: 5},
			"", func() { writeFile(t, fs.ws+"/new.txt", "hello", 0o644) },
			[]api.WatchChange{ch("new.txt", api.WatchCreated), ch("new.txt", api.WatchModified)},
		},
		{"modified", api.WatchRequest{TimeoutSeconds: 5}, "", func() {
			f, _ := os.OpenFile(fs.ws+"/existing.txt", os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString("more")
			f.Close()
		}, []api.WatchChange{ch("existing.txt", api.WatchModified)}},
		{
			"deleted",
			api.WatchRequest{TimeoutSeconds: 5},
			"", func() { os.Remove(fs.ws + "/new.txt") },
			[]api.WatchChange{ch("new.txt", api.WatchDeleted)},
		},
		{
			"moved",
			api.WatchRequest{TimeoutSeconds: 5},
			"", func() { os.Rename(fs.ws+"/existing.txt", fs.ws+"/moved.txt") },
			[]api.WatchChange{ch("existing.txt", api.WatchMovedFrom), ch("moved.txt", api.WatchMovedTo)},
		},
		{"written by the sidecar", api.WatchRequest{TimeoutSeconds: 5}, "", func() {
			postOK[api.FileCreateResult](t, fs, "/file-create", api.FileCreateRequest{Path: "created.txt", Content: "x"})
		}, []api.WatchChange{ch("created.txt", api.WatchMovedTo), ch("created.txt", api.WatchModified)}},
		// A file moved in by a command is not a write: moved_to alone.
		{"moved in", api.WatchRequest{TimeoutSeconds: 5}, "", func() {
			writeFile(t, fs.base+"/stage/in.txt", "x", 0o644)
			if err := os.Rename(fs.base+"/stage/in.txt", fs.ws+"/in.txt"); err != nil {
				t.Error(err)
			}
		}, []api.WatchChange{ch("in.txt", api.WatchMovedTo)}},
		{"not recursive", api.WatchRequest{TimeoutSeconds: 0.5}, "", func() { writeFile(t, fs.ws+"/sub/deep/inner.txt", "y", 0o644) }, nil},
		{
			"recursive",
			api.WatchRequest{TimeoutSeconds: 5, Recursive: true},
			fs.ws + "/sub/deep", func() { os.Remove(fs.ws + "/sub/deep/inner.txt") },
			[]api.WatchChange{ch("sub/deep/inner.txt", api.WatchDeleted)},
		},
		// A directory moved in whole, with what it holds: one event, whose
		// catch-up reports the contents. (A directory made and then
		// written to is TestWatchStreamNewDirectory: the one-shot watch
		// returns its first batch, so steps apart would race its end.)
		{"recursive directory moved in", api.WatchRequest{Path: "sub", TimeoutSeconds: 5, Recursive: true}, fs.ws + "/sub/deep", func() {
			writeFile(t, fs.base+"/stage/n1/n2/f", "", 0o644)
			if err := os.Rename(fs.base+"/stage/n1", fs.ws+"/sub/n1"); err != nil {
				t.Error(err)
			}
		}, []api.WatchChange{ch("n1", api.WatchMovedTo), ch("n1/n2", api.WatchCreated), ch("n1/n2/f", api.WatchCreated)}},
		{
			"outputs alias",
			api.WatchRequest{Path: "/outputs", TimeoutSeconds: 5},
			fs.outputs, func() { writeFile(t, fs.outputs+"/o", "", 0o644) },
			[]api.WatchChange{ch("o", api.WatchCreated), ch("o", api.WatchModified)},
		},
	}
	for _, tt := range tests { // in order: each builds on the last
		if tt.armed == "" {
			tt.armed = fs.ws
		}
		got := watchAfter(t, fs, tt.req, tt.armed, tt.act)
		if got.TimedOut != (len(tt.want) == 0) {
			t.Errorf("%s: timed_out %v with %d changes", tt.name, got.TimedOut, len(got.Changes))
		}
		if diff := cmp.Diff(tt.want, got.Changes, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	st, b := fs.post(t, "/watch", api.WatchRequest{Path: "file"})
	wantError(t, "watch of a file", st, b, 400, "Not a directory: file")
	if e := decodeError(t, b); e.Code != api.CodeNotADirectory {
		t.Errorf("watch of a file: code %q, want %q", e.Code, api.CodeNotADirectory)
	}
	st, b = fs.post(t, "/watch", api.WatchRequest{Path: "nope"})
	wantError(t, "watch of nothing", st, b, 404, "Directory not found: nope")
	// A tiny timeout is honoured (as MinWatchSeconds, TestWatchTimeout):
	// the watch ends before the default's 10 s, which a watch that ignored
	// it would wait out whatever the load.
	start := time.Now()
	got := postOK[api.WatchResult](t, fs, "/watch", api.WatchRequest{Path: "/mnt", TimeoutSeconds: 0.001})
	if !got.TimedOut || time.Since(start) >= api.DefaultWatchSeconds*time.Second {
		t.Errorf("watch with a tiny timeout = %+v after %v", got, time.Since(start))
	}
}

func TestWatchTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   float64
		want time.Duration
	}{
		{0, 10 * time.Second},
		{0.001, 100 * time.Millisecond},
		{-5, 100 * time.Millisecond},
		{2.5, 2500 * time.Millisecond},
		{3600, 60 * time.Second},
	}
	for _, tt := range tests {
		if got := watchTimeout(tt.in); got != tt.want {
			t.Errorf("watchTimeout(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestWatchStreamNewDirectory: under a recursive watch stream, a directory
// made during the watch is watched from the batch that reports it on, so
// a file written into it afterwards is reported too. Each step waits for
// the stream to report the one before: no timing is assumed.
func TestWatchStreamNewDirectory(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	writeFile(t, fs.ws+"/sub/keep", "", 0o644)
	body, _ := json.Marshal(api.WatchRequest{Path: "sub", Recursive: true, TimeoutSeconds: 30})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, fs.url+"/watch/stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = authHeader.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch stream = %d %s", resp.StatusCode, b)
	}
	dec := json.NewDecoder(resp.Body)
	var seen []api.WatchChange
	// until reads batches into seen (each change once: a write's modify
	// and close may come in two batches) until want is among them.
	until := func(want api.WatchChange) {
		t.Helper()
		for !slices.Contains(seen, want) {
			var ev api.WatchStreamEvent
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("watch stream ended before %+v (saw %+v): %v", want, seen, err)
			}
			for _, c := range ev.Changes {
				if !slices.Contains(seen, c) {
					seen = append(seen, c)
				}
			}
		}
	}
	ch := func(p, ev string) api.WatchChange { return api.WatchChange{Path: p, Event: ev} }
	var armed api.WatchStreamEvent
	if err := dec.Decode(&armed); err != nil || armed.Type != api.WatchStreamArmed {
		t.Fatalf("first line %+v, %v; want armed", armed, err)
	}
	if err := os.MkdirAll(fs.ws+"/sub/n1/n2", 0o755); err != nil {
		t.Fatal(err)
	}
	until(ch("n1/n2", api.WatchCreated))
	writeFile(t, fs.ws+"/sub/n1/n2/f", "x", 0o644)
	until(ch("n1/n2/f", api.WatchModified))
	want := []api.WatchChange{ch("n1", api.WatchCreated), ch("n1/n2", api.WatchCreated), ch("n1/n2/f", api.WatchCreated), ch("n1/n2/f", api.WatchModified)}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// TestWatchDirectoryRemoved: a watch whose own directory is removed or
// moved away answers at once with "." deleted, whatever it held. The
// watch keeps the directory open, so the kernel's IN_DELETE_SELF would
// wait for it to close: before, an rmdir of the watched directory was
// seen only when the timeout (here longer than watchAfter waits) ran out.
func TestWatchDirectoryRemoved(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	ch := func(p, ev string) api.WatchChange { return api.WatchChange{Path: p, Event: ev} }
	tests := []struct {
		name      string
		files     []string // made below the directory first
		recursive bool
		act       func(dir string) error
		want      []api.WatchChange
	}{
		{"rmdir", nil, false, os.Remove, []api.WatchChange{ch(".", api.WatchDeleted)}},
		{"rmdir recursive", nil, true, os.Remove, []api.WatchChange{ch(".", api.WatchDeleted)}},
		{"rm -r", []string{"f"}, false, os.RemoveAll, []api.WatchChange{ch("f", api.WatchDeleted), ch(".", api.WatchDeleted)}},
		{"rm -r recursive", []string{"sub/f"}, true, os.RemoveAll, []api.WatchChange{
			ch("sub/f", api.WatchDeleted), ch("sub", api.WatchDeleted), ch(".", api.WatchDeleted),
		}},
		{"moved out", []string{"f"}, false, func(dir string) error {
			return os.Rename(dir, fs.base+"/stage/"+filepath.Base(dir))
		}, []api.WatchChange{ch(".", api.WatchDeleted)}},
	}
	if err := os.MkdirAll(fs.base+"/stage", 0o755); err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("gone%d", i)
			dir := filepath.Join(fs.ws, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.files {
				writeFile(t, filepath.Join(dir, f), "x", 0o644)
			}
			armed := dir
			if tt.recursive && len(tt.files) > 0 {
				armed = filepath.Join(dir, filepath.Dir(tt.files[0]))
			}
			got := watchAfter(t, fs, api.WatchRequest{Path: name, TimeoutSeconds: 60, Recursive: tt.recursive}, armed, func() {
				if err := tt.act(dir); err != nil {
					t.Error(err)
				}
			})
			if diff := cmp.Diff(tt.want, got.Changes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("watch of %s (-want +got):\n%s", name, diff)
			}
		})
	}
}
