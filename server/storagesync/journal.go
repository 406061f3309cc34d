package storagesync

import (
	"slices"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// The sidecar's change journal (docs/storage.md, "What is synced"). Each
// reconcile asks the sidecar what changed since the token of its last
// answer: nothing (an idle sandbox costs one small request, no walk and
// no database read of its stored files), the subtrees that changed (only
// those are compared), or a full walk when the journal cannot tell. A
// full walk still runs every FullWalkEvery as a safety net (changes
// inotify cannot see: writes through a shared mmap, a hard link from
// outside the workspace), and on every reconcile while the sidecar does
// not watch (over its directory budget, no inotify instance to be had, an
// older sidecar).

// Journal states as GET …/sync shows them.
const (
	JournalWatching = "watching" // the sidecar's journal answers what changed
	JournalWalking  = "walking"  // every reconcile walks the whole workspace
)

// tracked is what the sync remembers of a running sandbox between
// reconciles, in memory: a restarted server starts with a full walk.
type tracked struct {
	token    string                   // the journal's position at the last answer; "" for none
	lastFull time.Time                // the last full walk
	deferred map[string]api.TreeEntry // files found changing, not stored yet, as last seen
	active   bool                     // the last reconcile found changes: look again soon
	journal  string                   // the sidecar's journal state
	watched  int                      // directories it watches
	// Counters since this server started.
	fullWalks, checks, fallbacks int64
}

// trackOf returns the sandbox's tracked state; call with s.mu held.
func (s *Service) trackOf(id string) *tracked {
	tr, ok := s.tracks[id]
	if !ok {
		tr = &tracked{}
		s.tracks[id] = tr
	}
	return tr
}

// treeQuery says how to read the workspace now: a full walk when final,
// when the safety net is due or without a token, else what changed
// since the token.
func (s *Service) treeQuery(id string, final bool, now time.Time) (TreeQuery, map[string]api.TreeEntry) {
	q := TreeQuery{Root: Root, Skip: s.d.Ignore}
	if final {
		return q, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.trackOf(id)
	q.Journal, q.MaxDirs = true, s.d.JournalMaxDirs
	if tr.token != "" && now.Sub(tr.lastFull) < s.fullEvery {
		q.Since = tr.token
	}
	return q, tr.deferred
}

// noteTree records how a reconcile went: the next token, the files left
// changing, and the counters GET …/sync shows.
func (s *Service) noteTree(id string, q TreeQuery, tree api.TreeResult, partial, changed bool, deferred map[string]api.TreeEntry, at time.Time) {
	if !q.Journal {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.trackOf(id)
	tr.token, tr.journal, tr.watched = tree.Token, tree.Journal, tree.WatchedDirs
	if tree.Truncated {
		tr.token = "" // what lies past the cap is unknown
	}
	tr.active = changed && tree.Journal == JournalWatching
	tr.deferred = deferred // what this reconcile left changing, partial or not
	if partial {
		tr.checks++
		return
	}
	tr.fullWalks++
	tr.lastFull = at
	if q.Since != "" {
		tr.fallbacks++ // asked what changed; the sidecar could not tell
	}
}

// journalStatus is the tracked state in its wire form (nil before the
// first reconcile on this server).
func (s *Service) journalStatus(id string) *api.SyncJournal {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, ok := s.tracks[id]
	if !ok {
		return nil
	}
	out := &api.SyncJournal{State: JournalWalking, WatchedDirs: tr.watched, FullWalks: tr.fullWalks, Checks: tr.checks, Fallbacks: tr.fallbacks}
	switch tr.journal {
	case JournalWatching:
		out.State = JournalWatching
	case "":
		out.Reason = "unsupported" // an older sidecar
	default:
		out.Reason = tr.journal
	}
	return out
}

// validScopes reports whether every changed path of a partial answer
// names a file or directory below the workspace (else the answer is not
// trusted, and the sync walks in full).
func validScopes(changed []string) bool {
	for _, c := range changed {
		if r, ok := StoredPath(c); !ok || r != c {
			return false
		}
	}
	return true
}

// underAny reports whether p is one of scopes or lies below one.
func underAny(p string, scopes []string) bool {
	return slices.ContainsFunc(scopes, func(s string) bool { return api.InScope(p, s) })
}
