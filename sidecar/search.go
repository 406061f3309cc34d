package sidecar

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// errStop ends a walk early without being an error.
var errStop = errors.New("stop walking")

// walkFiles calls fn for every regular file under base (or base itself
// when it is a file), in lexical order, with its real host path, its
// virtual path and its slash-separated path relative to base. Symlinked files are
// followed only when their real path stays inside the roots; symlinked
// directories are never followed, so nothing found lies outside them.
// Unreadable directories are skipped. fn returns errStop to end the walk.
func walkFiles(ctx context.Context, rs realRoots, base resolved, fn func(host, virt, rel string, fi fs.FileInfo) error) error {
	fi, err := os.Stat(base.host)
	if err != nil {
		return nil // nothing to search
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return nil
		}
		return ignoreStop(fn(base.host, base.virt, path.Base(base.virt), fi))
	}
	err = filepath.WalkDir(base.host, func(host string, d fs.DirEntry, err error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err != nil {
			if d != nil && d.IsDir() && host != base.host {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(host, base.host+"/"))
		var fi fs.FileInfo
		switch {
		case d.Type().IsRegular():
			fi, err = d.Info()
		case d.Type()&fs.ModeSymlink != 0:
			real, ok := rs.realInside(host, false)
			if !ok {
				return nil
			}
			host = real // opened without following links, so the target itself
			fi, err = os.Stat(host)
		default:
			return nil // a FIFO would block a reader; devices and sockets hold no text
		}
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		return fn(host, path.Join(base.virt, rel), rel, fi)
	})
	return ignoreStop(err)
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
	pm := h.paths()
	base, err := pm.resolve(req.Path, false)
	if err != nil {
		return out, err
	}
	lim := h.limits()
	tctx, cancel := context.WithTimeout(ctx, lim.GrepTimeout)
	defer cancel()
	err = walkFiles(tctx, pm.real(), base, func(_, virt, rel string, fi fs.FileInfo) error {
		if !pat.match(rel) {
			return nil
		}
		if len(out.Matches) == lim.GlobMaxMatches {
			out.Truncated = true
			return errStop
		}
		out.Matches = append(out.Matches, lsEntry(virt, fi))
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
