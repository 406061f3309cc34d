package storagesync_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
	"github.com/boxkite/boxkite/server/storagesync"
)

// workspace is a sandbox's /workspace as the sidecar's file API reads it
// for the sync: every file by its path, written at written.
type workspace map[string]string

var written = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

func (w workspace) Tree(context.Context, string, storagesync.TreeQuery) (api.TreeResult, error) {
	var out api.TreeResult
	at := written.UnixNano()
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range w {
			if !yield(p) {
				return
			}
		}
	}) {
		out.Entries = append(out.Entries, api.TreeEntry{Path: p, Kind: "file", Size: int64(len(w[p])), ModifiedNS: at})
	}
	return out, nil
}

func (w workspace) Bundle(_ context.Context, _, _ string, paths []string) (io.ReadCloser, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Size: int64(len(w[p])), Mode: 0o644, ModTime: written, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, w[p]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

// TestSyncNames stores workspace paths a store folds or refuses, against
// each backend's real server, and lists and reads each back by its path:
// "a\b" beside "a/b" (Azure and SeaweedFS read '\' as '/': one object),
// control characters (Azurite answered 500 to the listing of the whole
// prefix), invalid UTF-8 (SeaweedFS and fake-gcs-server left it out of
// the listing), '%' sequences that must not decode.
func TestSyncNames(t *testing.T) {
	w := workspace{
		"a/b": "slash", `a\b`: "backslash", `back\\`: "two backslashes", `%5C`: "escaped-looking",
		"100%41.txt": "percent", "%": "lone percent", "nl\nx": "newline", "cr\rx": "carriage return", "tab\tx": "tab",
		"ctl\x01x": "control", "del\x7fx": "delete", "c1\u0085x": "next line", "nc\ufffex": "noncharacter",
		"bad\xffutf8": "invalid utf-8", "dot.": "trailing dot", "sp ace ": "spaces", "q?x=1&y#z+[*]": "url characters",
		"ünï cødé 文件.txt": "unicode", "d/" + storagesync.NamesMarker: "a file named as the marker",
	}
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := objtest.Start(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			b, err := storagesync.Open(ctx, srv.Config)
			if err != nil {
				t.Fatal(err)
			}
			db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "boxkite.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			s, err := storagesync.New(storagesync.Deps{Backend: b, Store: db, Files: w, Log: slog.New(slog.DiscardHandler), Now: time.Now, Prefix: "p"})
			if err != nil {
				t.Fatal(err)
			}
			sb := &model.Sandbox{ID: "sb", AccountID: "acct"}
			s.Created(ctx, sb)
			if _, res, err := s.Flush(ctx, sb); err != nil || res.Uploaded != len(w) {
				t.Fatalf("flush: %+v, %v; want %d stored", res, err, len(w))
			}
			got := workspace{}
			if err := s.Stored(ctx, sb, func(p string, _ storagesync.Object) error {
				rc, err := s.Open(ctx, sb, p)
				if err != nil {
					return err
				}
				defer rc.Close()
				var sbuf strings.Builder
				_, err = io.Copy(&sbuf, rc)
				got[p] = sbuf.String()
				return err
			}); err != nil {
				t.Fatalf("list and read back: %v", err)
			}
			if d := cmp.Diff(w, got); d != "" {
				t.Errorf("read back (-workspace +stored):\n%s", d)
			}
			// A second forced flush finds every object where it put it.
			if _, res, err := s.Flush(ctx, sb); err != nil || res.Uploaded != 0 {
				t.Errorf("second flush: %+v, %v; want nothing stored again", res, err)
			}
		})
	}
}
