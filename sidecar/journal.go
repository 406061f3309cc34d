package sidecar

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// The change journal of the workspace (docs/storage.md, "What is
// synced"). The storage sync asks GET /files/tree?since=TOKEN what
// changed since it last looked; the journal answers nothing, the subtrees
// that changed, or a full walk when it cannot tell (not started, events
// lost, over its budget, no inotify instance to be had). It starts only
// when the sync first asks: a sidecar on a server without object storage
// never holds an inotify instance, a goroutine or a thread for it. Once
// started, one goroutine waits for events on the runtime's netpoller (no
// OS thread of its own) and records the paths that changed; directories
// are watched as the sandbox user through descriptors opened beneath the
// workspace without following links, and the host's ignored directories
// are never watched.

// Journal states, as GET /files/tree reports them.
const (
	journalWatching    = "watching"    // changes are tracked
	journalOverBudget  = "over_budget" // more directories than its budget: full walks
	journalUnavailable = "unavailable" // no inotify instance or watch to be had (EMFILE, ENOSPC): full walks
	journalUnsupported = "unsupported" // no inotify (not Linux): full walks
)

// Journal bounds.
const (
	defaultJournalMaxDirs = 4096 // directories watched when the host names no budget
	maxJournalChanged     = 8192 // changed paths kept; past it the journal forgets and answers a full walk
)

// journal is the workspace's change journal. Every field is guarded by mu.
type journal struct {
	mu         sync.Mutex
	epoch      string   // tells this journal's tokens from another sidecar's (or a restarted one's)
	skip       []string // directory names never watched (the host's ignore list)
	maxDirs    int
	newInotify func() (int, error) // inotify_init1 (Handler.newInotify)
	w          *jwatch             // the inotify instance; nil when not watching
	state      string              // journalWatching or why not
	// seq counts recorded changes; a token is the seq when a walk
	// began, and tokens below floor are no longer answered exactly.
	seq, floor uint64
	changed    map[string]uint64 // path below the workspace → seq of its last change
	rescan     bool              // events were lost: the next answer is a full walk that re-arms
	lastDirs   int               // directories the last full walk found
}

// syncJournal returns the sidecar's journal, creating it (idle: no
// instance yet) on first use.
func (h *Handler) syncJournal() *journal {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	if h.jrn == nil {
		var b [8]byte
		_, _ = rand.Read(b[:])
		h.jrn = &journal{epoch: hex.EncodeToString(b[:]), changed: map[string]uint64{}, newInotify: h.newInotify}
	}
	return h.jrn
}

// journalMaxDirs is the host's ?max_dirs=, clamped; the default when absent
// or malformed.
func journalMaxDirs(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return defaultJournalMaxDirs
	}
	return min(n, api.MaxJournalDirs)
}

// answer answers GET /files/tree?since= for the workspace at root: the
// subtrees that changed since the token since, or a full walk (which
// starts or re-arms the journal) with the token to pass next time.
func (j *journal) answer(v *fsView, root *cursor, since string, skip []string, maxDirs int) (api.TreeResult, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !slices.Equal(skip, j.skip) || maxDirs != j.maxDirs {
		// Another ignore list or budget: start over with it.
		j.stopLocked("")
		j.skip, j.maxDirs, j.lastDirs = slices.Clone(skip), maxDirs, 0
	}
	if j.w != nil {
		j.drainLocked()
	}
	if j.w != nil && !j.rescan {
		if scopes, ok := j.changedSince(since); ok {
			out := api.TreeResult{Entries: []api.TreeEntry{}, Token: j.token(), Partial: true, Changed: scopes, Journal: j.state, WatchedDirs: j.w.watched()}
			err := walkScopes(v, root, scopes, skip, &out)
			if err == nil && !out.Truncated {
				return out, nil
			}
			// Too much to answer in part: answer in full below.
		}
	}
	return j.fullWalk(v, root, skip)
}

// fullWalk walks the whole workspace and watches every directory it
// passes (starting the journal when it is not running and has the budget);
// the token is taken before the walk, so a change made during it is
// answered next time.
func (j *journal) fullWalk(v *fsView, root *cursor, skip []string) (api.TreeResult, error) {
	out := api.TreeResult{Entries: []api.TreeEntry{}}
	if j.w == nil && (j.state != journalOverBudget || j.lastDirs <= j.maxDirs) {
		if err := j.startLocked(v, root); err != nil {
			j.state = journalStateOf(err)
		}
	}
	j.rescan = false
	tok := j.token()
	dirs := 0
	onDir := func(rel string, fd int) {
		dirs++
		if j.w != nil {
			j.addLocked(rel, fd)
		}
	}
	if err := v.user.do(func() error { onDir("", root.dir()); return nil }); err != nil {
		return out, err
	}
	if err := walkTree(v, root.sub(), "", skip, &out, onDir); err != nil {
		return out, err
	}
	j.lastDirs = dirs
	if out.Truncated && j.w != nil {
		j.stopLocked(journalOverBudget) // directories past the cap went unwatched
	}
	if j.w != nil {
		out.Token, out.WatchedDirs = tok, j.w.watched()
	}
	out.Journal = j.state
	return out, nil
}

// token is the journal's position now.
func (j *journal) token() string { return j.epoch + "." + strconv.FormatUint(j.seq, 10) }

// changedSince returns the subtrees changed since the token since, sorted,
// none below another, and forgets what came before it; false when the
// journal cannot tell (another journal's token, or one from before events
// were lost).
func (j *journal) changedSince(since string) ([]string, bool) {
	epoch, seq, ok := parseToken(since)
	if !ok || epoch != j.epoch || seq < j.floor || seq > j.seq {
		return nil, false
	}
	var paths []string
	for p, s := range j.changed {
		if s > seq {
			paths = append(paths, p)
		} else {
			delete(j.changed, p) // the host has seen it; an older token is answered in full
		}
	}
	j.floor = seq
	return topScopes(paths), true
}

// parseToken splits a token "<epoch>.<seq>" (epoch: 16 hex digits).
func parseToken(s string) (epoch string, seq uint64, ok bool) {
	epoch, n, found := strings.Cut(s, ".")
	if !found || len(epoch) != 16 || strings.Trim(epoch, "0123456789abcdef") != "" {
		return "", 0, false
	}
	if n == "" || (len(n) > 1 && n[0] == '0') {
		return "", 0, false // one spelling per token
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return epoch, seq, true
}

// topScopes sorts paths and drops those in the scope of another
// (api.InScope): a changed directory is walked whole.
func topScopes(paths []string) []string {
	slices.SortFunc(paths, comparePaths)
	out := paths[:0]
	for _, p := range paths {
		// What lies in a scope sorts right after it, so only the last
		// scope kept can hold p.
		if len(out) == 0 || !api.InScope(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return slices.Clip(out)
}

// comparePaths orders paths byte by byte with '/' before every other
// byte: a directory, then everything below it, then its siblings ("a",
// "a/b", "a.b"), where plain byte order would put "a.b" between them.
func comparePaths(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			switch {
			case a[i] == '/':
				return -1
			case b[i] == '/':
				return 1
			}
			return cmp.Compare(a[i], b[i])
		}
	}
	return cmp.Compare(len(a), len(b))
}

// note records a change of rel (below the workspace).
func (j *journal) note(rel string) {
	j.seq++
	j.changed[rel] = j.seq
	if len(j.changed) > maxJournalChanged {
		j.forget()
	}
}

// forget drops what the journal knew: every token handed out so far is
// answered with a full walk.
func (j *journal) forget() {
	j.seq++
	j.floor = j.seq
	clear(j.changed)
}

// walkScopes adds the entries under each changed path below the workspace
// at root, reached without following a link: a file or link itself, a
// directory's whole subtree (ignored directories skipped), nothing for
// a path gone.
func walkScopes(v *fsView, root *cursor, scopes, skip []string, out *api.TreeResult) error {
	for _, s := range scopes {
		if !validRel(s) || slices.ContainsFunc(strings.Split(s, "/"), func(c string) bool { return slices.Contains(skip, c) }) {
			continue
		}
		dir, name := path.Split(s)
		var st unix.Stat_t
		parent := -1
		err := v.user.do(func() error {
			fd, err := openBeneath(root.dir(), splitPath(dir), oPath|unix.O_DIRECTORY)
			if err != nil {
				return err
			}
			parent = fd
			return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		})
		if err != nil {
			if parent >= 0 {
				unix.Close(parent)
			}
			if gone(err) {
				continue
			}
			return err
		}
		mtime := st.Mtim.Nano()
		switch uint32(st.Mode) & unix.S_IFMT {
		case unix.S_IFLNK:
			out.Entries = append(out.Entries, api.TreeEntry{Path: s, Kind: "symlink", ModifiedNS: mtime})
		case unix.S_IFREG:
			out.Entries = append(out.Entries, api.TreeEntry{Path: s, Kind: "file", Size: st.Size, ModifiedNS: mtime})
		case unix.S_IFDIR:
			cur := root.sub()
			if dir != "" {
				cur.push(parent, strings.TrimSuffix(dir, "/"))
				parent = -1
			}
			err := v.user.do(func() error {
				fd, err := unix.Openat(cur.dir(), name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err == nil {
					cur.push(fd, name)
				}
				return err
			})
			if err != nil {
				cur.close()
				break // swapped for something else meanwhile: the next answer has it
			}
			if err := walkTree(v, cur, s+"/", skip, out, nil); err != nil {
				return err
			}
		}
		if parent >= 0 {
			unix.Close(parent)
		}
		if out.Truncated {
			return nil
		}
	}
	return nil
}

// gone reports whether err means a path is no longer there as named: gone,
// or a component on the way swapped for a link or a file.
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) ||
		errors.Is(err, unix.EXDEV) || errors.Is(err, errEscapes)
}
