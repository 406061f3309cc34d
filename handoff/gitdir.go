package handoff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A .git that is a file ("gitdir: …") names the repository somewhere else
// on this machine: a linked worktree (git worktree add, Claude Code's
// --worktree) names <repo>/.git/worktrees/<name>, a submodule's checkout
// <super>/.git/modules/<name>. Sent as it is, it names a path the sandbox
// does not have, and git does not work there. So the tree gets a .git
// directory instead, a repository of its own: the shared part of the
// repository (objects, refs, config, hooks, …) with this worktree's own
// files (HEAD, index, its reflog, a merge or rebase in progress) over it.
// (The .git files below the top, and the links back to them, linkRepos
// makes hold in the sandbox: worktrees.go.)

// commonTopFiles are the files at the top of a repository's common
// directory that every worktree shares; the others there (HEAD, index,
// ORIG_HEAD, MERGE_HEAD, …) are the main worktree's own.
var commonTopFiles = map[string]bool{"config": true, "packed-refs": true, "shallow": true, "description": true}

// perWorktree reports whether rel (slash-separated, in a common
// directory) belongs to one worktree rather than to the repository
// (gitrepository-layout(5)): the main worktree's, which a linked worktree
// must not take.
func perWorktree(rel string, isDir bool) bool {
	if !strings.Contains(rel, "/") && !isDir {
		return !commonTopFiles[rel]
	}
	for _, p := range []string{"worktrees", "logs/HEAD", "refs/bisect", "refs/worktree", "refs/rewritten", "logs/refs/bisect", "logs/refs/worktree", "logs/refs/rewritten"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// worktreeOnly are the files of a linked worktree's git directory that
// describe the link itself and mean nothing in a repository of its own.
var worktreeOnly = map[string]bool{"commondir": true, "gitdir": true, "locked": true}

// addLinkedGitDir replaces the .git file of the tree by the repository it
// names, when that lies outside the tree. It does nothing when .git is a
// directory (or absent), or names a directory inside the tree.
func (t *Tree) addLinkedGitDir(ctx context.Context) error {
	if fi, err := os.Lstat(filepath.Join(t.Root, ".git")); err != nil || !fi.Mode().IsRegular() {
		return nil // a repository here, or none: nothing to replace
	}
	gitDir, err := gitRevParse(ctx, t.Root, "--absolute-git-dir")
	if err == nil {
		if rel, err := filepath.Rel(t.Root, gitDir); err == nil && filepath.IsLocal(rel) {
			return nil // inside the tree: it comes along as it is
		}
	}
	common, err2 := gitRevParse(ctx, t.Root, "--path-format=absolute", "--git-common-dir")
	if err = errors.Join(err, err2); err != nil {
		// --all in a tree whose repository is gone: the file goes as it is.
		t.Skipped = append(t.Skipped, fmt.Sprintf(".git: names a repository git cannot open here, sent as it is (%v)", err))
		return nil
	}
	linked := filepath.Clean(common) != filepath.Clean(gitDir)
	if why := t.notOurs(ctx, gitDir, common, linked); why != "" {
		// Not a worktree or submodule of this tree: a .git file the tree
		// came with (an archive, files copied out of a sandbox) must not
		// send a repository of this machine it names.
		t.Skipped = append(t.Skipped, fmt.Sprintf(".git: names a repository that is not this tree's (%s), sent as it is", why))
		return nil
	}
	t.dropTree(".git")
	if t.src == nil {
		t.src, t.data = map[string]string{}, map[string][]byte{}
	}
	t.addGitEntry(".git", gitDir)
	if err := t.addGitFiles(gitDir, func(rel string, _ bool) bool { return linked && worktreeOnly[rel] }); err != nil {
		return err
	}
	if linked {
		have := map[string]bool{}
		for _, e := range t.Entries {
			have[e] = true
		}
		err := t.addGitFiles(common, func(rel string, isDir bool) bool {
			return perWorktree(rel, isDir) || have[".git/"+rel]
		})
		if err != nil {
			return err
		}
		t.skipOtherWorktrees(common, gitDir)
	}
	return t.standaloneConfig()
}

// skipOtherWorktrees warns of the repository's other linked worktrees
// (its common/worktrees/*, but this tree's gitDir), which the repository
// of its own the tree gets does not carry (perWorktree).
func (t *Tree) skipOtherWorktrees(common, gitDir string) {
	entries, _ := os.ReadDir(filepath.Join(common, "worktrees"))
	for _, e := range entries {
		admin := filepath.Join(common, "worktrees", e.Name())
		if !e.IsDir() || samePath(admin, ".", gitDir) {
			continue
		}
		t.Skipped = append(t.Skipped, fmt.Sprintf(".git: linked worktree %s of the same repository is not in the tree, left out", t.worktreeDir(admin)))
	}
}

// notOurs says why the git directory gitDir, which the tree's .git file
// names, does not belong to this tree, or "" when it does: a linked
// worktree's directory names this tree's .git file in its gitdir file,
// and a submodule's names this tree as its core.worktree. Git keeps both
// links itself; a repository's own directory has neither (nor has one
// made by git init --separate-git-dir, which therefore goes as a file).
// A linked worktree's directory must also be where git makes them,
// common/worktrees/<name>: a directory elsewhere naming the tree back
// could have come with the tree, and its commondir names any repository.
func (t *Tree) notOurs(ctx context.Context, gitDir, common string, linked bool) string {
	if linked {
		if !samePath(gitDir, "..", filepath.Join(common, "worktrees")) {
			return "a worktree's directory outside its repository's worktrees directory"
		}
		b, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
		if err != nil {
			return "a worktree's directory without its gitdir file"
		}
		if !samePath(gitDir, strings.TrimSpace(string(b)), filepath.Join(t.Root, ".git")) {
			return "another worktree's directory"
		}
		return ""
	}
	out, err := exec.CommandContext(ctx, "git", "config", "--file", filepath.Join(gitDir, "config"), "--get", "core.worktree").Output()
	wt := strings.TrimSpace(string(out))
	if err != nil || wt == "" {
		return "a repository's own directory, not a worktree's or a submodule's"
	}
	if !samePath(gitDir, wt, t.Root) {
		return "another submodule's directory"
	}
	return ""
}

// samePath reports whether p (relative to dir unless absolute) and want
// are one file.
func samePath(dir, p, want string) bool {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	a, err := os.Stat(p)
	if err != nil {
		return false
	}
	b, err := os.Stat(want)
	return err == nil && os.SameFile(a, b)
}

// gitRevParse runs git rev-parse args in dir and returns its one line.
func gitRevParse(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "rev-parse"}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("find the git directory of %s: %w", dir, err)
	}
	p := strings.TrimSpace(string(out))
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("find the git directory of %s: git answered %q", dir, p)
	}
	return p, nil
}

// addGitFiles adds the files under dir as .git/<rel>, except those skip
// names (a skipped directory is skipped whole).
func (t *Tree) addGitFiles(dir string, skip func(rel string, isDir bool) bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&^fs.ModeDir != 0 {
			return nil // git keeps no links, sockets or devices in its directory
		}
		t.addGitEntry(".git/"+rel, p)
		return nil
	})
}

// addGitEntry adds rel, read from local, unless it is in the tree already.
func (t *Tree) addGitEntry(rel, local string) {
	if _, ok := t.src[rel]; ok {
		return
	}
	t.src[rel] = local
	t.Entries = append(t.Entries, rel)
	if fi, err := os.Stat(local); err == nil && fi.Mode().IsRegular() {
		t.Files++
		t.Bytes += fi.Size()
	}
}

// standaloneConfig rewrites the repository's config for a .git directory
// at the top of its work tree: core.worktree (a submodule's, naming its
// checkout relative to .git/modules/<name>) would point elsewhere, and
// core.bare (a worktree of a bare repository) would deny the work tree.
func (t *Tree) standaloneConfig() error {
	if _, ok := t.src[".git/config"]; !ok {
		return nil
	}
	b, err := t.read(".git/config")
	if err != nil {
		return err
	}
	for _, key := range []string{"core.worktree", "core.bare"} {
		if _, b, err = editGitConfig(b, 5, "--unset-all", key); err != nil { // 5: the key was not set
			return fmt.Errorf("rewrite %s: %w", t.local(".git/config"), err)
		}
	}
	t.setData(".git/config", b)
	return nil
}

// local is where entry rel of the tree is read from on this machine.
func (t *Tree) local(rel string) string {
	if p, ok := t.src[rel]; ok {
		return p
	}
	return filepath.Join(t.Root, filepath.FromSlash(rel))
}
