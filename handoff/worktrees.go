package handoff

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Every repository in the tree is linked to its work trees, and they to
// it, by paths git writes, often absolute paths of this machine:
//
//   - a checkout whose .git is a file names its git directory ("gitdir: …"):
//     a linked worktree its repository's worktrees/<n>, a submodule's
//     checkout its superproject's .git/modules/<name>;
//   - a linked worktree's directory, <repo>/worktrees/<n>, names the
//     worktree's .git file back in its gitdir file;
//   - a submodule's git directory names its checkout as core.worktree in
//     its config (relative to the git directory).
//
// Sent as they are, the absolute ones name paths the sandbox does not
// have: git in such a checkout finds no repository, and git in the
// repository shows the worktree prunable (git worktree prune drops it).
// So every link whose target the tree carries is made to name it at its
// sandbox path, for the top repository and for every repository nested in
// the tree alike (a clone, a submodule, a worktree of either); a relative
// link that names the same entry in the sandbox holds as it is. A linked
// worktree's directory whose worktree the tree does not carry (it lies
// outside the tree, or git leaves it out) is left out, with a warning: the
// sandbox's repository has the worktrees the sandbox has. A .git file
// naming a repository outside the tree goes as it is, with a warning.

// gitdirLine is the prefix of a .git file's one line.
const gitdirLine = "gitdir: "

// linkRepos rewrites, for the sandbox, the links between the repositories
// in the tree and their work trees, and leaves out the directories of
// linked worktrees it does not carry.
func (t *Tree) linkRepos() error {
	t.dropStrayWorktrees()
	loc := t.locator()
	slices.Sort(t.Entries) // the warnings in order
	for _, e := range t.Entries {
		var err error
		switch {
		case path.Base(e) == ".git":
			err = t.linkCheckout(loc, e)
		case !inGitDir(e):
		case path.Base(path.Dir(path.Dir(e))) == "worktrees" && path.Base(e) == "gitdir":
			err = t.linkWorktreeBack(loc, e)
		case path.Base(e) == "config" || path.Base(e) == "config.worktree":
			err = t.linkWorkTreeConfig(loc, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// inGitDir reports whether entry e lies in a git directory of the tree (a
// .git directory, or one below it: a submodule's, a worktree's). Git keeps
// no work tree file there, so nothing below a .git is a user's file.
func inGitDir(e string) bool {
	return strings.HasPrefix(e, ".git/") || strings.Contains(e, "/.git/")
}

// worktreeAdmins are the linked worktrees' directories of the tree's
// repositories: <git dir>/worktrees/<n>, with its gitdir and commondir.
func (t *Tree) worktreeAdmins() []string {
	has := map[string]bool{}
	for _, e := range t.Entries {
		has[e] = true
	}
	var admins []string
	for _, e := range t.Entries {
		if inGitDir(e) && path.Base(path.Dir(e)) == "worktrees" && has[e+"/gitdir"] && has[e+"/commondir"] {
			admins = append(admins, e)
		}
	}
	slices.Sort(admins)
	return admins
}

// dropStrayWorktrees leaves out the directories of the linked worktrees
// whose .git file the tree does not carry, each named in a warning.
func (t *Tree) dropStrayWorktrees() {
	loc := t.locator()
	for _, admin := range t.worktreeAdmins() {
		local := t.local(admin)
		b, err := t.read(admin + "/gitdir")
		if err == nil {
			if e, ok := loc.find(local, strings.TrimSpace(string(b))); ok && path.Base(e) == ".git" {
				continue
			}
		}
		t.dropTree(admin)
		t.Skipped = append(t.Skipped, fmt.Sprintf("%s: linked worktree %s is not in the tree, left out (git in the sandbox would show it prunable)", admin, t.worktreeDir(local)))
	}
}

// linkCheckout makes the .git file at entry e, if it is one, name its git
// directory at its sandbox path; one naming a repository the tree does not
// carry goes as it is, with a warning (the top's has one already).
func (t *Tree) linkCheckout(loc *locator, e string) error {
	if _, ok := t.src[e]; ok {
		return nil // a repository brought in for the top's .git file
	}
	p := t.local(e)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return nil
	}
	target, ok := readLink(p)
	if !ok {
		return nil
	}
	link, ok := loc.link(path.Dir(e), filepath.Dir(p), target)
	switch {
	case !ok && e != ".git":
		t.Skipped = append(t.Skipped, fmt.Sprintf("%s: names %s, which is not in the tree, sent as it is (git in the sandbox does not work in %s)", e, target, path.Dir(e)))
	case link != "":
		t.setData(e, []byte(gitdirLine+link+"\n"))
	}
	return nil
}

// linkWorktreeBack makes the gitdir file at entry e of a linked worktree's
// directory name the worktree's .git file at its sandbox path.
func (t *Tree) linkWorktreeBack(loc *locator, e string) error {
	b, err := t.read(e)
	if err != nil {
		return err
	}
	admin := path.Dir(e)
	if link, ok := loc.link(admin, t.local(admin), strings.TrimSpace(string(b))); ok && link != "" {
		t.setData(e, []byte(link+"\n"))
	}
	return nil
}

// linkWorkTreeConfig makes the core.worktree of the git directory's config
// at entry e (a submodule's names its checkout) name the work tree at its
// sandbox path.
func (t *Tree) linkWorkTreeConfig(loc *locator, e string) error {
	dir := path.Dir(e)
	if !slices.Contains(t.Entries, dir+"/HEAD") {
		return nil // not a git directory's config
	}
	b, err := t.read(e)
	if err != nil {
		return err
	}
	if !bytes.Contains(bytes.ToLower(b), []byte("worktree")) {
		return nil // no core.worktree: spare asking git
	}
	out, _, err := editGitConfig(b, 1, "--get", "core.worktree")
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return nil // not set, or git cannot read it: the config goes as it is
	}
	link, ok := loc.link(dir, t.local(dir), strings.TrimSpace(string(out)))
	if !ok || link == "" {
		return nil
	}
	if _, b, err = editGitConfig(b, 0, "core.worktree", link); err != nil {
		return fmt.Errorf("rewrite %s: %w", t.local(e), err)
	}
	t.setData(e, b)
	return nil
}

// locator finds the tree's entries by the local paths links name.
type locator struct {
	t       *Tree
	roots   []string          // the tree's root, and its real path
	entries map[string]bool   // the entries read from below a root, and their directories
	src     map[string]string // local path -> entry, for those read from elsewhere
}

func (t *Tree) locator() *locator {
	l := &locator{t: t, roots: []string{filepath.Clean(t.Root)}, entries: map[string]bool{}, src: map[string]string{}}
	if real, err := filepath.EvalSymlinks(t.Root); err == nil && real != l.roots[0] {
		l.roots = append(l.roots, real)
	}
	for _, e := range t.Entries {
		if p, ok := t.src[e]; ok {
			l.src[filepath.Clean(p)] = e
			continue
		}
		for ; e != "." && !l.entries[e]; e = path.Dir(e) {
			l.entries[e] = true // git lists files, not their directories
		}
	}
	return l
}

// find is the entry a link names: target, relative to the local directory
// dir unless absolute. It is "." for the tree's root.
func (l *locator) find(dir, target string) (string, bool) {
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	tries := []string{filepath.Clean(target)}
	if real, err := filepath.EvalSymlinks(target); err == nil && real != tries[0] {
		tries = append(tries, real)
	}
	for _, p := range tries {
		if e, ok := l.src[p]; ok {
			return e, true
		}
		for _, root := range l.roots {
			rel, err := filepath.Rel(root, p)
			if err != nil || rel != "." && !filepath.IsLocal(rel) {
				continue
			}
			if rel = filepath.ToSlash(rel); rel == "." || l.entries[rel] {
				return rel, true
			}
		}
	}
	return "", false
}

// link is what a link written at entry dir (read from the local directory
// local) naming target should say in the sandbox: "" when it holds there
// as it is (relative, and naming the same entry), else the sandbox path
// of the entry it names. ok is false when the tree does not carry that.
func (l *locator) link(dir, local, target string) (link string, ok bool) {
	e, ok := l.find(local, target)
	if !ok {
		return "", false
	}
	if !filepath.IsAbs(target) && path.Join(dir, filepath.ToSlash(target)) == e {
		return "", true
	}
	return path.Join(SandboxHome, l.t.Name, e), true
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

// read is what entry e sends: its rewritten contents, else its file's.
func (t *Tree) read(e string) ([]byte, error) {
	if b, ok := t.data[e]; ok {
		return b, nil
	}
	b, err := os.ReadFile(t.local(e))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.local(e), err)
	}
	return b, nil
}

// setData sends b as entry e's contents, and counts the difference.
func (t *Tree) setData(e string, b []byte) {
	if old, ok := t.data[e]; ok {
		t.Bytes -= int64(len(old))
	} else if fi, err := os.Lstat(t.local(e)); err == nil {
		t.Bytes -= fi.Size()
	}
	if t.data == nil {
		t.data = map[string][]byte{}
	}
	t.data[e] = b
	t.Bytes += int64(len(b))
}

// editGitConfig runs git config --file on a copy of the config b with
// args, and returns what it printed and the copy afterwards. Its exit
// status notSet (the key was not set) is no error.
func editGitConfig(b []byte, notSet int, args ...string) (out, after []byte, err error) {
	f, err := os.CreateTemp("", "boxkite-handoff-gitconfig-")
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if err = errors.Join(err, f.Close()); err != nil {
		return nil, nil, err
	}
	out, err = exec.Command("git", append([]string{"config", "--file", f.Name()}, args...)...).Output()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != notSet) {
		if ee != nil {
			if msg := strings.TrimSpace(string(ee.Stderr)); msg != "" {
				return nil, nil, fmt.Errorf("git config %s: %w: %s", strings.Join(args, " "), err, msg)
			}
		}
		return nil, nil, fmt.Errorf("git config %s: %w", strings.Join(args, " "), err)
	}
	after, err = os.ReadFile(f.Name())
	return out, after, err
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
