package handoff

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A repository keeps one directory per linked worktree, .git/worktrees/<n>,
// whose gitdir file names the worktree's .git file, which names the
// directory back ("gitdir: …"). git writes both as absolute paths of this
// machine: sent as they are, git in the sandbox shows every worktree
// prunable (its .git is not there) and git worktree prune drops them, and a
// worktree carried inside the tree cannot find its repository. So a linked
// worktree the tree carries gets both links rewritten to its sandbox
// paths, and one it does not carry (it lies outside the tree, or git
// leaves it out) is left out, with a warning: the sandbox's repository
// has the worktrees the sandbox has. Relative links (git worktree add with
// worktree.useRelativePaths) hold in the sandbox as they are.

// worktreesDir is where a repository at the top of the tree keeps its
// linked worktrees' directories.
const worktreesDir = ".git/worktrees/"

// gitdirLine is the prefix of a .git file's one line.
const gitdirLine = "gitdir: "

// linkWorktrees rewrites the links between the worktree directories of the
// tree's repository (.git/worktrees/<n>) and the worktrees the tree
// carries, and leaves out the directories of those it does not carry.
func (t *Tree) linkWorktrees() error {
	admins := map[string]bool{} // <n> of every .git/worktrees/<n> the tree carries
	for _, e := range t.Entries {
		if rest, ok := strings.CutPrefix(e, worktreesDir); ok {
			admins[strings.SplitN(rest, "/", 2)[0]] = true
		}
	}
	if len(admins) == 0 {
		return nil
	}
	if _, ok := t.src[".git"]; ok {
		return nil // a linked worktree's repository: it carries no worktrees/
	}
	carried := map[string]string{} // <n> -> the entry of its worktree's .git file
	for _, e := range slices.Sorted(slices.Values(t.Entries)) {
		if path.Base(e) != ".git" || e == ".git" {
			continue
		}
		n, ok := t.worktreeOf(e, admins)
		if !ok {
			continue
		}
		if prev, dup := carried[n]; dup && t.namedBy(n, prev) {
			continue // a copy of the worktree beside it: the one git names wins
		}
		carried[n] = e
	}
	for _, n := range slices.Sorted(maps.Keys(admins)) {
		admin := worktreesDir + n
		e, ok := carried[n]
		if !ok {
			t.dropTree(admin)
			t.Skipped = append(t.Skipped, fmt.Sprintf("%s: linked worktree %s is not in the tree, left out (git in the sandbox would show it prunable)", admin, t.worktreeDir(filepath.Join(t.Root, filepath.FromSlash(admin)))))
			continue
		}
		sandboxTop := path.Join(SandboxHome, t.Name)
		if err := t.rewriteLink(e, gitdirLine+path.Join(sandboxTop, admin)); err != nil {
			return err
		}
		if err := t.rewriteLink(admin+"/gitdir", path.Join(sandboxTop, e)); err != nil {
			return err
		}
	}
	return nil
}

// worktreeOf reports which worktree directory .git/worktrees/<n> of the
// tree's repository the .git file at entry e names, if any.
func (t *Tree) worktreeOf(e string, admins map[string]bool) (string, bool) {
	if _, ok := t.src[e]; ok {
		return "", false
	}
	p := t.local(e)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", false
	}
	target, ok := readLink(p)
	if !ok {
		return "", false
	}
	for n := range admins {
		if samePath(filepath.Dir(p), target, filepath.Join(t.Root, filepath.FromSlash(worktreesDir+n))) {
			return n, true
		}
	}
	return "", false
}

// namedBy reports whether worktree directory <n>'s gitdir file names the
// .git file at entry e.
func (t *Tree) namedBy(n, e string) bool {
	admin := filepath.Join(t.Root, filepath.FromSlash(worktreesDir+n))
	b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	return err == nil && samePath(admin, strings.TrimSpace(string(b)), t.local(e))
}

// worktreeDir is the worktree a worktree directory's gitdir file names, as
// written there, for a warning.
func (t *Tree) worktreeDir(admin string) string {
	b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return "(its gitdir file is unreadable)"
	}
	p := strings.TrimSpace(string(b))
	if !filepath.IsAbs(p) {
		p = filepath.Join(admin, p)
	}
	return filepath.Dir(filepath.Clean(p))
}

// readLink is the path a .git file names ("gitdir: …"), as written.
func readLink(p string) (string, bool) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), gitdirLine)
	return target, ok && target != ""
}

// rewriteLink sends entry e (a .git file or a gitdir file) with the
// sandbox path link in place of an absolute one; a relative path holds in
// the sandbox as it is.
func (t *Tree) rewriteLink(e, link string) error {
	p := t.local(e)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	if !filepath.IsAbs(strings.TrimPrefix(strings.TrimSpace(string(b)), gitdirLine)) {
		return nil
	}
	if t.data == nil {
		t.data = map[string][]byte{}
	}
	t.data[e] = []byte(link + "\n")
	t.Bytes += int64(len(link)+1) - int64(len(b))
	return nil
}

// dropTree removes rel and everything below it from the tree's entries
// and counts.
func (t *Tree) dropTree(rel string) {
	t.Entries = slices.DeleteFunc(t.Entries, func(e string) bool {
		if e != rel && !strings.HasPrefix(e, rel+"/") {
			return false
		}
		if fi, err := os.Lstat(t.local(e)); err == nil && fi.Mode().IsRegular() {
			t.Files--
			t.Bytes -= fi.Size()
		}
		return true
	})
}
