package sidecar

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// errStop ends a walk early without being an error.
var errStop = errors.New("stop walking")

// found is a regular file a walk found.
type found struct {
	dir       int // descriptor of the directory holding it; valid during the callback
	name      string
	virt, rel string // as requests name it; relative to the walk's base, slash-separated
	info      fs.FileInfo
}

// walkFiles calls fn for every regular file under base (or base itself
// when it is a file), in lexical order. Symlinked files are followed only
// when they lead inside the roots, and are named where they were found;
// symlinked directories are never followed, so nothing found lies outside
// the roots. Unreadable directories are skipped. fn returns errStop to end
// the walk. It runs as the sandbox user throughout: it holds its thread,
// and fn must not block on the network.
func walkFiles(ctx context.Context, v *fsView, base *target, fn func(found) error) error {
	return ignoreStop(v.user.do(func() error {
		switch {
		case !base.exists:
			return nil // nothing to search
		case base.isDir():
			return walkDir(ctx, v, base.cur.sub(), base.virt(), "", fn)
		case base.mode != unix.S_IFREG:
			return nil
		}
		var st unix.Stat_t
		if err := unix.Fstatat(base.cur.dir(), base.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil
		}
		virt := base.virt()
		return fn(found{dir: base.cur.dir(), name: base.name, virt: virt, rel: path.Base(virt), info: statInfo{base.name, st}})
	}))
}

// walkDir walks the directory at cur, which it closes; prefix is its path
// below the walk's base.
func walkDir(ctx context.Context, v *fsView, cur *cursor, baseVirt, prefix string, fn func(found) error) error {
	defer cur.close()
	des, err := readDir(cur.dir())
	if err != nil {
		return nil // unreadable: skipped
	}
	for _, de := range des {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := prefix + de.name
		switch de.kind() {
		case unix.S_IFDIR:
			fd, err := unix.Openat(cur.dir(), de.name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			sub := cur.sub()
			sub.push(fd, de.name)
			if err := walkDir(ctx, v, sub, baseVirt, rel+"/", fn); err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := fn(found{dir: cur.dir(), name: de.name, virt: joinPath(baseVirt, rel), rel: rel, info: de.info()}); err != nil {
				return err
			}
		case unix.S_IFLNK:
			if err := followFile(v, cur, de.name, joinPath(baseVirt, rel), rel, fn); err != nil {
				return err
			}
		}
		// A FIFO would block a reader; devices and sockets hold no text.
	}
	return nil
}

// followFile calls fn for the symlink name in the directory at cur if it
// leads to a regular file inside the roots.
func followFile(v *fsView, cur *cursor, name, virt, rel string, fn func(found) error) error {
	w := walker{v: v}
	t, err := w.walk(cur.sub(), []string{name})
	if err != nil {
		return nil
	}
	defer t.close()
	var st unix.Stat_t
	if !t.exists || t.mode != unix.S_IFREG || unix.Fstatat(t.cur.dir(), t.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil
	}
	return fn(found{dir: t.cur.dir(), name: t.name, virt: virt, rel: rel, info: statInfo{name, st}})
}

func ignoreStop(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

func (h *Handler) glob(w http.ResponseWriter, r *http.Request) error {
	var req api.GlobRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	out, err := h.globFiles(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// globFiles runs a /glob. Past the time cap it returns what it found,
// truncated.
func (h *Handler) globFiles(ctx context.Context, req api.GlobRequest) (api.GlobResult, error) {
	out := api.GlobResult{Matches: []api.GlobMatch{}}
	pat, ok := compileGlob(req.Pattern)
	if !ok {
		return out, nil // errors → [] as in the reference
	}
	v, base, done, err := h.openTarget(req.Path, false)
	if err != nil {
		return out, err
	}
	defer done()
	lim := h.limits()
	tctx, cancel := context.WithTimeout(ctx, lim.GrepTimeout)
	defer cancel()
	err = walkFiles(tctx, v, base, func(f found) error {
		if !pat.match(f.rel) {
			return nil
		}
		if len(out.Matches) == lim.GlobMaxMatches {
			out.Truncated = true
			return errStop
		}
		out.Matches = append(out.Matches, lsEntry(f.virt, f.info))
		return nil
	})
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	if err != nil {
		out.Truncated = true // out of time: what was found so far
	}
	slices.SortFunc(out.Matches, func(a, b api.LsEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// globPattern is a /glob pattern split into slash-separated segments, with
// "**" standing for any number of directories.
type globPattern []string

// compileGlob prepares pattern as Python's Path.rglob does: a leading "/"
// is dropped and the pattern matches at any depth ("**/" is prepended).
// ok is false for an empty or malformed pattern.
func compileGlob(pattern string) (globPattern, bool) {
	pattern = strings.TrimLeft(pattern, "/")
	if pattern == "" || strings.IndexByte(pattern, 0) >= 0 {
		return nil, false
	}
	segs := []string{"**"}
	for s := range strings.SplitSeq(pattern, "/") {
		switch {
		case s == "" || s == ".":
			continue // "a//b" and "./a" mean what they say in a path
		case s == "**" && segs[len(segs)-1] == "**":
			continue // "**/**" is "**", and collapsing keeps matching linear
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, false
		}
		segs = append(segs, s)
	}
	if segs[len(segs)-1] == "**" {
		return nil, false // rglob("**") lists directories; /glob lists files only
	}
	return segs, true
}

// match reports whether the slash-separated relative path rel matches,
// by dynamic programming over (pattern segment, path segment) so no
// pattern, however many "**" it holds, takes more than their product.
func (g globPattern) match(rel string) bool {
	name := strings.Split(rel, "/")
	// ok[j] is whether g[i:] matches name[j:], computed for i from the end.
	ok := make([]bool, len(name)+1)
	ok[len(name)] = true
	for i := len(g) - 1; i >= 0; i-- {
		next := slices.Clone(ok)
		for j := len(name); j >= 0; j-- {
			switch {
			case g[i] == "**":
				ok[j] = next[j] || (j < len(name) && ok[j+1])
			case j == len(name):
				ok[j] = false
			default:
				m, _ := path.Match(g[i], name[j])
				ok[j] = m && next[j+1]
			}
		}
	}
	return ok[0]
}

// timedOut is the /grep answer when the wall clock cap is hit.
func timedOut(d time.Duration) api.GrepResult {
	return api.GrepResult{
		Matches:   []api.GrepMatch{},
		Truncated: true,
		Error:     "Search timed out after " + d.String() + " -- narrow the path, add a glob, or make the pattern more specific",
	}
}
