package storagesync

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// journalFiles is a workspace in memory behind a sidecar whose change
// journal is in the state journal: JournalWatching, "unavailable" (no
// inotify instance to be had: it walks, and says why), or "" (an older
// sidecar without one). It counts full walks.
type journalFiles struct {
	memFiles
	journal   string
	seq       int
	changed   map[string]int
	fullWalks int
	checks    int
}

func (j *journalFiles) write(p, data string, at time.Time) {
	j.files[p] = memFile{[]byte(data), at}
	j.seq++
	j.changed[p] = j.seq
}

func (j *journalFiles) remove(p string) {
	delete(j.files, p)
	j.seq++
	j.changed[p] = j.seq
}

func (j *journalFiles) Tree(ctx context.Context, id string, q TreeQuery) (api.TreeResult, error) {
	since, err := strconv.Atoi(q.Since)
	if j.journal != JournalWatching || !q.Journal || err != nil {
		j.fullWalks++
		out, err := j.memFiles.Tree(ctx, id, q)
		if q.Journal {
			out.Journal = j.journal
			if j.journal == JournalWatching {
				out.Token = strconv.Itoa(j.seq)
			}
		}
		return out, err
	}
	j.checks++
	out := api.TreeResult{Token: strconv.Itoa(j.seq), Partial: true, Journal: "watching", Entries: []api.TreeEntry{}}
	for p, s := range j.changed {
		if s <= since {
			continue
		}
		out.Changed = append(out.Changed, p)
		if f, ok := j.files[p]; ok {
			out.Entries = append(out.Entries, api.TreeEntry{Path: p, Kind: "file", Size: int64(len(f.data)), ModifiedNS: f.mtime.UnixNano()})
		}
	}
	return out, nil
}

// TestJournalSkipsWalks: with the sidecar's journal, an idle sandbox is
// not walked each quarter interval (only by the safety net), while a file
// a command writes still arrives within the interval, once stable: also
// one found changing and not touched again, which the journal will not
// report twice; a delete propagates. Without the journal (an older
// sidecar, or one with no inotify instance to be had) every reconcile is
// a full walk, and files arrive and deletes propagate all the same.
func TestJournalSkipsWalks(t *testing.T) {
	for _, journal := range []string{JournalWatching, "unavailable", ""} {
		withJournal := journal == JournalWatching
		t.Run("journal="+journal, func(t *testing.T) {
			now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
			start := now
			files := &journalFiles{memFiles: memFiles{files: map[string]memFile{"old.txt": {[]byte("old"), now.Add(-time.Hour)}}}, journal: journal, changed: map[string]int{}}
			b := &memBackend{objs: map[string][]byte{}}
			st := &memStore{synced: map[string]Synced{}, queue: map[string]time.Time{}}
			const interval = 8 * time.Second // reconciles every 2 s, files stable after 1 s
			s, err := New(Deps{
				Backend: b, Store: st, Files: files, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now },
				Prefix: "p", Interval: interval, StableFor: time.Second, FullWalkEvery: time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			state, _ := st.SyncState(t.Context(), "sb")
			reconciles := 0
			// run advances the clock by tick steps up to d, reconciling
			// whenever the worker would.
			run := func(d time.Duration) {
				for end := now.Add(d); now.Before(end); now = now.Add(tick) {
					if s.due(state, now) {
						reconciles++
						s.runOne(t.Context(), state)
					}
				}
			}
			// arrives checks that p is stored byte-exact within d.
			arrives := func(p, data string, d time.Duration) {
				t.Helper()
				for end := now.Add(d); now.Before(end) && !bytes.Equal(b.objs["p/acct/sb/"+p], []byte(data)); {
					run(tick)
				}
				if got := b.objs["p/acct/sb/"+p]; !bytes.Equal(got, []byte(data)) {
					t.Fatalf("%s: stored %q after %s, want %q", p, got, d, data)
				}
			}
			run(60 * time.Second) // idle a minute
			if withJournal && (files.fullWalks > 2 || files.checks < 25) {
				t.Errorf("idle for a minute: %d full walks, %d checks; want at most 2 walks (the first and the safety net)", files.fullWalks, files.checks)
			}
			if !withJournal && files.fullWalks < 25 {
				t.Errorf("without a journal: %d full walks in a minute, want one per reconcile", files.fullWalks)
			}
			walks := files.fullWalks

			// A command writes a file: stored within the interval.
			files.write("out/result.txt", "42", now)
			arrives("out/result.txt", "42", interval)
			// One still being written when first seen, then left alone.
			files.write("slow.log", "a", now)
			run(tick)
			files.write("slow.log", "ab", now)
			arrives("slow.log", "ab", interval)
			// Deleted: gone from the store within the interval.
			files.remove("out/result.txt")
			for end := now.Add(interval); now.Before(end); {
				run(tick)
			}
			if _, ok := b.objs["p/acct/sb/out/result.txt"]; ok {
				t.Error("a deleted file is still stored")
			}
			if _, ok := b.objs["p/acct/sb/old.txt"]; !ok {
				t.Error("old.txt was never stored")
			}
			if withJournal && files.fullWalks-walks > 1 {
				t.Errorf("%d full walks while files changed in %s, want at most the safety net's", files.fullWalks-walks, now.Sub(start))
			}
			j := s.journalStatus("sb")
			if withJournal && (j.State != JournalWatching || j.FullWalks != int64(files.fullWalks) || j.Checks != int64(files.checks)) {
				t.Errorf("GET …/sync journal: %+v, want watching with %d walks and %d checks", j, files.fullWalks, files.checks)
			}
			if want := cmp.Or(journal, "unsupported"); !withJournal && (j.State != JournalWalking || j.Reason != want || j.FullWalks != int64(files.fullWalks)) {
				t.Errorf("GET …/sync journal without one: %+v, want walking (%s) with %d walks", j, want, files.fullWalks)
			}
			t.Logf("%s: %d reconciles, %d full walks, %d checks", strings.TrimPrefix(t.Name(), "TestJournalSkipsWalks/"), reconciles, files.fullWalks, files.checks)
		})
	}
}

// FuzzValidScopes: a scope the sync accepts from a sidecar names a path
// below the workspace, and what lies under it stays under its key prefix.
func FuzzValidScopes(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "", "/workspace/a", "a/./b", "a\x00"} {
		f.Add(s, "a/b/c")
	}
	f.Fuzz(func(t *testing.T, scope, p string) {
		if !validScopes([]string{scope}) {
			return
		}
		if scope == "" || strings.HasPrefix(scope, "/") || strings.Contains("/"+scope+"/", "/../") || strings.Contains("/"+scope+"/", "/./") {
			t.Fatalf("validScopes accepted %q", scope)
		}
		if _, ok := StoredPath(p); ok && underAny(p, []string{scope}) && !strings.HasPrefix(p+"/", scope+"/") {
			t.Errorf("%q counted under %q", p, scope)
		}
	})
}
