package handoff

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Tree is the working tree a handoff sends: files, symlinks and (outside
// git) directories, by slash-separated path relative to Root.
type Tree struct {
	Root    string // local directory
	Name    string // its directory under SandboxHome
	Entries []string
	Files   int
	Bytes   int64
	Skipped []string // warnings about entries left out

	// src and data are where entries that do not lie at Root/<entry> are
	// read from: a linked worktree's repository (addLinkedGitDir), and
	// what is sent instead of a file: git's links rewritten for the
	// sandbox (linkRepos) and a config without core.worktree.
	src  map[string]string // entry -> local path
	data map[string][]byte // entry -> contents, instead of its file's

	dirs map[string]bool // directory -> it is a symlink (belowSymlink)
}

// ProjectRoot is the directory whose tree a handoff from dir sends: the
// top of the git work tree dir is in (so .git comes along), else dir.
func ProjectRoot(ctx context.Context, dir string) string {
	if top := gitTopLevel(ctx, dir); top != "" {
		return top
	}
	return dir
}

// gitTopLevel is the top of the git work tree dir is in, or "" when dir
// is not in one (or does not exist here).
func gitTopLevel(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return ""
	}
	if top := strings.TrimSpace(string(out)); top != "" && filepath.IsAbs(top) {
		return filepath.Clean(top)
	}
	return ""
}

// sandboxName is the directory name the tree gets in the sandbox: root's
// own name when it is a plain identifier, else "project".
func sandboxName(root string) string {
	if b := filepath.Base(root); ValidIdent(b) {
		return b
	}
	return "project"
}

// ListTree lists the tree under root. Unless all is set, a git work tree
// is listed by git, which applies .gitignore, .git/info/exclude and the
// global excludes exactly as git does; .git itself always comes along.
// Outside git, or with all, everything is listed.
func ListTree(ctx context.Context, root string, all bool) (*Tree, error) {
	t := &Tree{Root: root, Name: sandboxName(root)}
	var names []string
	gitListed := false
	if !all {
		if _, err := os.Lstat(filepath.Join(root, ".git")); err == nil {
			var err error
			if names, err = gitFiles(ctx, root, ""); err != nil {
				return nil, err
			}
			gitListed = true
		}
	}
	if !gitListed {
		names = []string{"."}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if err := t.add(n, seen); err != nil {
			return nil, err
		}
	}
	if err := t.addLinkedGitDir(ctx); err != nil {
		return nil, err
	}
	if err := t.linkRepos(); err != nil {
		return nil, err
	}
	slices.Sort(t.Entries)
	return t, nil
}

// gitFiles lists what git keeps in the repository at root/dir (dir is
// slash-separated, "" for root itself), relative to root, and its .git. A
// repository nested in it (a clone inside the tree, a submodule's
// checkout) is one entry for git, which does not look inside; it is
// listed the same way, by its own git, so what its .gitignore leaves out
// (build output, node_modules) stays behind as it does at the top.
func gitFiles(ctx context.Context, root, dir string) ([]string, error) {
	abs := filepath.Join(root, filepath.FromSlash(dir))
	out, err := exec.CommandContext(ctx, "git", "-C", abs, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil, fmt.Errorf("list the files git keeps in %s: %w", abs, err)
	}
	names := []string{path.Join(dir, ".git")}
	for _, n := range bytes.Split(out, []byte{0}) {
		name := path.Join(dir, strings.TrimSuffix(string(n), "/"))
		if len(n) == 0 {
			continue
		}
		if nestedRepoInside(ctx, root, filepath.Join(root, filepath.FromSlash(name))) {
			if nested, err := gitFiles(ctx, root, name); err == nil {
				names = append(names, nested...)
				continue
			}
			// git cannot list it (a broken repository): it goes whole.
		}
		names = append(names, name)
	}
	return names, nil
}

// nestedRepoInside reports whether p is a directory with a .git of its
// own whose repository lies in the tree at root (a clone's .git, a
// submodule's ../.git/modules/…). One elsewhere (a .git file naming a
// repository of this machine, which a tree from an archive may carry) is
// not asked what it keeps: its index would name files to send.
func nestedRepoInside(ctx context.Context, root, p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	if _, err = os.Lstat(filepath.Join(p, ".git")); err != nil {
		return false
	}
	gitDir, err := gitRevParse(ctx, p, "--absolute-git-dir")
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	rel, err := filepath.Rel(root, gitDir)
	return err == nil && filepath.IsLocal(rel)
}

// belowSymlink reports whether a directory above name (slash-separated,
// relative to t.Root) is a symlink: git may list a path through one (an
// index entry whose directory became a symlink since), and reading it
// would read outside the tree.
func (t *Tree) belowSymlink(name string) bool {
	if t.dirs == nil {
		t.dirs = map[string]bool{}
	}
	for dir := path.Dir(name); dir != "." && dir != "/"; dir = path.Dir(dir) {
		link, ok := t.dirs[dir]
		if !ok {
			fi, err := os.Lstat(filepath.Join(t.Root, filepath.FromSlash(dir)))
			link = err == nil && fi.Mode()&fs.ModeSymlink != 0
			t.dirs[dir] = link
		}
		if link {
			return true
		}
	}
	return false
}

// add adds name and, for a directory, everything below it.
func (t *Tree) add(name string, seen map[string]bool) error {
	if t.belowSymlink(name) {
		t.Skipped = append(t.Skipped, fmt.Sprintf("%s: below a symlink, left out", name))
		return nil
	}
	start := filepath.Join(t.Root, filepath.FromSlash(name))
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == start {
				return nil // tracked by git but deleted in the tree
			}
			return err
		}
		rel, err := filepath.Rel(t.Root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if seen[rel] {
			return nil
		}
		seen[rel] = true
		switch mode := d.Type(); {
		case mode.IsDir():
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if !linkInside(rel, target) {
				t.Skipped = append(t.Skipped, fmt.Sprintf("%s: symlink to %s, outside the tree", rel, target))
				return nil
			}
		case mode.IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			t.Files++
			t.Bytes += fi.Size()
		default:
			t.Skipped = append(t.Skipped, fmt.Sprintf("%s: not a regular file, directory or symlink", rel))
			return nil
		}
		t.Entries = append(t.Entries, rel)
		return nil
	})
}

// linkInside reports whether a symlink at rel pointing to target stays in
// the tree; the sandbox refuses links that leave it, and they would point
// at nothing there anyway.
func linkInside(rel, target string) bool {
	if path.IsAbs(target) || strings.IndexByte(target, 0) >= 0 {
		return false
	}
	p := path.Join(path.Dir(rel), target)
	return p != ".." && !strings.HasPrefix(p, "../")
}

// writeEntry writes one tree entry into tw as prefix/rel, keeping its
// mode and modification time; a file is written exactly as large as
// listed, so one that changes meanwhile is an error, not a torn archive.
func (t *Tree) writeEntry(tw *tar.Writer, prefix, rel string) error {
	p := t.local(rel)
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = path.Join(prefix, rel), "", "", 0, 0
	// Whole seconds, truncated: the writer would round, and a file written
	// here in the last half second would be dated after the handoff's
	// record, as if changed in the sandbox since (Changed).
	hdr.ModTime = hdr.ModTime.Truncate(time.Second)
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if b, ok := t.data[rel]; ok {
		hdr.Size = int64(len(b))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	return nil
}
