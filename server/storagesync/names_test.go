package storagesync

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
)

func TestObjectName(t *testing.T) {
	for _, c := range []struct{ path, name string }{
		{"a/b.txt", "a/b.txt"},
		{`a\b`, "a%5Cb"},
		{"100%.txt", "100%25.txt"},
		{"p%20q%zz", "p%2520q%25zz"},
		{"%5C", "%255C"},
		{"nl\nx/cr\rx\t", "nl%0Ax/cr%0Dx%09"},
		{"del\x7f c1\u0085 \ufffe\uffff", "del%7F c1%C2%85 %EF%BF%BE%EF%BF%BF"},
		{"bad\xffutf8\xe2\x82", "bad%FFutf8%E2%82"},
		{"ünï cødé 文件 \ufffd.txt", "ünï cødé 文件 \ufffd.txt"},
		{"sp ace/q?x#y&z+[*]:dot.", "sp ace/q?x#y&z+[*]:dot."},
	} {
		if got := ObjectName(c.path); got != c.name {
			t.Errorf("ObjectName(%q) = %q, want %q", c.path, got, c.name)
		}
		if got, ok := WorkspacePath(c.name); !ok || got != c.path {
			t.Errorf("WorkspacePath(%q) = %q, %v; want %q", c.name, got, ok, c.path)
		}
	}
	for _, name := range []string{
		NamesMarker, "a%5cb", "%2", "%", "x%zz", "a%20b", "a%2Fb", "%2E%2E/x", "..%2Fx", "a/%2E%2E", "%00", "a//b", "/abs", "../x", "",
	} {
		if p, ok := WorkspacePath(name); ok {
			t.Errorf("WorkspacePath(%q) = %q, true; want false (ObjectName never gives it)", name, p)
		}
	}
}

// FuzzObjectName: every workspace path maps to a name no store folds or
// refuses (no '\', no control character, valid UTF-8) and back to itself,
// so two paths never share an object; and any name WorkspacePath accepts
// is a path under the workspace (no "..", not absolute) that maps back to
// that very name.
func FuzzObjectName(f *testing.F) {
	for _, s := range []string{`a\b`, "a/b", "%", "%5C", `%5C\`, "%25", "p%20q%zz", "nl\nx", "\xff", "\u0085", NamesMarker, "a/../b", "%2E%2E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name := ObjectName(s)
		if !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r != '%' && escapes(r) }) {
			t.Errorf("ObjectName(%q) = %q: a character a store folds or refuses", s, name)
		}
		if _, ok := StoredPath(s); ok {
			if back, ok := WorkspacePath(name); !ok || back != s {
				t.Errorf("WorkspacePath(ObjectName(%q)) = %q, %v", s, back, ok)
			}
		}
		if p, ok := WorkspacePath(s); ok {
			if _, stored := StoredPath(p); !stored || ObjectName(p) != s {
				t.Errorf("WorkspacePath(%q) = %q: not a stored path that maps back", s, p)
			}
		}
	})
}

// TestAdoptWrittenBefore: a sandbox's prefix written before names were
// escaped is read as written (a file named "100%41.txt" is not "100A.txt"),
// and its first flush moves it over: the names ObjectName changes are
// stored again under their escaped names (a '\' path and the twin a
// folding store wrote it over too), the marker is written, and the
// listing then shows every workspace path once.
func TestAdoptWrittenBefore(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	files := &memFiles{files: map[string]memFile{
		"a.txt": {[]byte("alpha"), old}, "100%41.txt": {[]byte("percent"), old},
		`x\y`: {[]byte("bslsh"), old}, "x/y": {[]byte("slash"), old},
	}}
	// As a folding store held it: "x\y" landed on "x/y", over its twin,
	// with the same size: only the names tell.
	b := &memBackend{objs: map[string][]byte{
		"p/acct/sb/a.txt": []byte("alpha"), "p/acct/sb/100%41.txt": []byte("percent"), "p/acct/sb/x/y": []byte("bslsh"),
	}}
	st := &memStore{synced: map[string]Synced{}, queue: map[string]time.Time{}}
	for p, f := range files.files {
		st.synced[p] = Synced{Path: p, Size: int64(len(f.data)), MtimeNS: f.mtime.UnixNano()}
	}
	s, err := New(Deps{Backend: b, Store: st, Files: files, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }, Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	sb := &model.Sandbox{ID: "sb", AccountID: "acct"}
	stored := func() map[string]string {
		t.Helper()
		got := map[string]string{}
		if err := s.Stored(t.Context(), sb, func(p string, o Object) error {
			rc, err := s.Open(t.Context(), sb, p)
			if err != nil {
				return err
			}
			defer rc.Close()
			data, err := io.ReadAll(rc)
			got[p] = string(data)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := map[string]string{"a.txt": "alpha", "100%41.txt": "percent", "x/y": "bslsh"}
	if d := cmp.Diff(before, stored()); d != "" {
		t.Errorf("written before, read as written (-want +got):\n%s", d)
	}
	s.forgetNames(sb.ID) // as a server that starts
	if _, res, err := s.Flush(context.Background(), sb); err != nil || res.Uploaded != 3 {
		t.Fatalf("flush: %+v, %v; want 3 stored again", res, err)
	}
	want := map[string][]byte{
		"p/acct/sb/" + NamesMarker: []byte(namesMarkerBody), "p/acct/sb/a.txt": []byte("alpha"),
		"p/acct/sb/100%2541.txt": []byte("percent"), "p/acct/sb/x%5Cy": []byte("bslsh"), "p/acct/sb/x/y": []byte("slash"),
	}
	if d := cmp.Diff(want, b.objs); d != "" {
		t.Errorf("bucket after the flush (-want +got):\n%s", d)
	}
	s.forgetNames(sb.ID)
	after := map[string]string{"a.txt": "alpha", "100%41.txt": "percent", `x\y`: "bslsh", "x/y": "slash"}
	if d := cmp.Diff(after, stored()); d != "" {
		t.Errorf("read after the flush (-want +got):\n%s", d)
	}
}
