package handoff

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// newRepo makes a repository at dir with files (name -> content)
// committed.
func newRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	git(t, filepath.Dir(dir), "init", "-q", dir)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
}

// newSuperproject makes, in a new directory base, a repository lib and a
// repository app (root) with lib as its submodule sub, committed.
func newSuperproject(t *testing.T) (base, lib, root string) {
	t.Helper()
	base = t.TempDir()
	lib = filepath.Join(base, "lib")
	newRepo(t, lib, map[string]string{"lib.go": "package lib\n"})
	root = filepath.Join(base, "app")
	newRepo(t, root, map[string]string{"main.go": "package main\n"})
	git(t, root, "submodule", "add", "-q", lib, "sub")
	git(t, root, "commit", "-qm", "submodule")
	return base, lib, root
}

// moveAway renames dirs, this machine's repositories, until the test
// ends: git on a sandbox's copy must not lean on them.
func moveAway(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		if err := os.Rename(dir, dir+".gone"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Rename(dir+".gone", dir) })
	}
}

// rehome makes the links a handoff wrote for the sandbox path top (the
// tree's .git files, its repositories' worktrees/*/gitdir files and the
// core.worktree of their configs) name the copy at got instead, as if got
// were at top, so that git can be asked about the copy here.
func rehome(t *testing.T, got, top string) {
	t.Helper()
	err := filepath.WalkDir(got, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		link := d.Name() == ".git" || d.Name() == "gitdir" && filepath.Base(filepath.Dir(filepath.Dir(p))) == "worktrees" ||
			d.Name() == "config" && strings.Contains(p, "/.git/")
		if !link {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(strings.ReplaceAll(string(b), top, got)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// worktreeList is git worktree list of the repository at dir, paths
// relative to top, with the "prunable" of each.
func worktreeList(t *testing.T, dir, top string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(git(t, dir, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			rel, err := filepath.Rel(top, p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rel)
		} else if strings.HasPrefix(l, "prunable") {
			out[len(out)-1] += " prunable"
		}
	}
	return out
}

// TestWorktreeLinks: a repository handed off with linked worktrees
// arrives with the worktrees the tree carries (one git adds inside it) linked at their sandbox paths, both ways,
// and without those it does not carry (one beside the tree, one its
// .gitignore leaves out), each named in a warning. Before, every .git
// file and gitdir file went naming this machine's paths: git in the
// sandbox showed all three worktrees prunable, git worktree prune dropped
// them, and git in the carried worktree failed ("not a git repository").
func TestWorktreeLinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "app")
	newRepo(t, root, map[string]string{".gitignore": "/ignored-wt/\n", "a.txt": "one\n"})
	inside := filepath.Join(root, ".claude", "worktrees", "inside")
	git(t, root, "worktree", "add", "-q", "-b", "inside", inside)
	os.WriteFile(filepath.Join(inside, "a.txt"), []byte("two\n"), 0o644)
	git(t, inside, "commit", "-qam", "in the worktree")
	os.WriteFile(filepath.Join(inside, "b.txt"), []byte("untracked\n"), 0o644)
	git(t, root, "worktree", "add", "-q", "-b", "beside", filepath.Join(base, "app-beside"))
	git(t, root, "worktree", "add", "-q", "-b", "ignored", filepath.Join(root, "ignored-wt"))
	want := gitState(t, inside)

	tree, err := ListTree(context.Background(), root, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tree.Entries {
		if strings.HasPrefix(e, ".git/worktrees/app-beside") || strings.HasPrefix(e, ".git/worktrees/ignored-wt") || strings.HasPrefix(e, "ignored-wt") {
			t.Errorf("the tree sends %s, of a worktree it does not carry", e)
		}
	}
	wantWarn := []string{
		".git/worktrees/app-beside: linked worktree " + filepath.Join(base, "app-beside") + " is not in the tree, left out (git in the sandbox would show it prunable)",
		".git/worktrees/ignored-wt: linked worktree " + filepath.Join(root, "ignored-wt") + " is not in the tree, left out (git in the sandbox would show it prunable)",
	}
	if diff := cmp.Diff(wantWarn, tree.Skipped); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	got := sendTree(t, root)
	top := path.Join(SandboxHome, "app")
	for file, link := range map[string]string{
		".claude/worktrees/inside/.git": "gitdir: " + top + "/.git/worktrees/inside\n",
		".git/worktrees/inside/gitdir":  top + "/.claude/worktrees/inside/.git\n",
	} {
		if b, err := os.ReadFile(filepath.Join(got, file)); err != nil || string(b) != link {
			t.Errorf("the sandbox's %s = %q, %v; want %q", file, b, err, link)
		}
	}
	// Git here, on the copy as if it were at its sandbox path, with this
	// machine's repository and worktrees moved away.
	rehome(t, got, top)
	os.Rename(root, root+".gone")
	defer os.Rename(root+".gone", root)
	if diff := cmp.Diff([]string{".", ".claude/worktrees/inside"}, worktreeList(t, got, got)); diff != "" {
		t.Errorf("git worktree list in the sandbox (-want +got):\n%s", diff)
	}
	if s := gitState(t, filepath.Join(got, ".claude", "worktrees", "inside")); s != want {
		t.Errorf("git in the sandbox's worktree:\n%s\nwant, as here:\n%s", s, want)
	}
	git(t, got, "worktree", "prune")
	if l := worktreeList(t, got, got); !slices.Contains(l, ".claude/worktrees/inside") {
		t.Errorf("git worktree prune in the sandbox dropped the carried worktree: %v", l)
	}
}

// TestOtherWorktreesNamed: a linked worktree handed off becomes a
// repository of its own, without the repository's other linked
// worktrees, and each is named in a warning.
func TestOtherWorktreesNamed(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "app")
	newRepo(t, root, map[string]string{"a.txt": "one\n"})
	wt := filepath.Join(base, "wt")
	git(t, root, "worktree", "add", "-q", "-b", "wt", wt)
	git(t, root, "worktree", "add", "-q", "-b", "other", filepath.Join(base, "other"))
	tree, err := ListTree(context.Background(), wt, false)
	if err != nil {
		t.Fatal(err)
	}
	wantWarn := []string{".git: linked worktree " + filepath.Join(base, "other") + " of the same repository is not in the tree, left out"}
	if diff := cmp.Diff(wantWarn, tree.Skipped); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	got := sendTree(t, wt)
	os.Rename(root, root+".gone")
	defer os.Rename(root+".gone", root)
	if diff := cmp.Diff([]string{"."}, worktreeList(t, got, got)); diff != "" {
		t.Errorf("git worktree list in the sandbox (-want +got):\n%s", diff)
	}
}

// TestNestedRepoLinks: the repositories nested in the tree arrive linked
// at their sandbox paths as the top's does, and git works in each with
// this machine's copies gone: a submodule whose links git wrote relative
// (they hold as they are), one whose links are absolute (as git before
// 1.7.10 wrote them: its .git file and core.worktree), a linked worktree
// of a submodule, a clone and its linked worktree (both links). The
// clone's worktree beside the tree is left out, and a worktree of a
// repository outside the tree goes as it is, each named in a warning.
// Before, only the top repository's worktrees were linked: git in the
// absolute submodule and in both worktrees failed ("not a git
// repository"), and git worktree list in the clone showed every worktree
// prunable.
func TestNestedRepoLinks(t *testing.T) {
	base, lib, root := newSuperproject(t)
	ext := filepath.Join(base, "ext")
	newRepo(t, ext, map[string]string{"ext.go": "package ext\n"})
	git(t, root, "submodule", "add", "-q", lib, "sub-abs")
	git(t, root, "commit", "-qm", "another submodule")
	absModule := filepath.Join(root, ".git", "modules", "sub-abs")
	if err := os.WriteFile(filepath.Join(root, "sub-abs", ".git"), []byte(gitdirLine+absModule+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, root, "config", "--file", filepath.Join(absModule, "config"), "core.worktree", filepath.Join(root, "sub-abs"))
	git(t, filepath.Join(root, "sub"), "worktree", "add", "-q", "-b", "sub-wt", filepath.Join(root, "sub-wt"))
	clone := filepath.Join(root, "vendor", "clone")
	git(t, root, "clone", "-q", lib, clone)
	feat := filepath.Join(root, "vendor", "clone-feat")
	git(t, clone, "worktree", "add", "-q", "-b", "feat", feat)
	os.WriteFile(filepath.Join(feat, "lib.go"), []byte("package lib // feat\n"), 0o644)
	git(t, feat, "commit", "-qam", "in the clone's worktree")
	os.WriteFile(filepath.Join(feat, "new.txt"), []byte("untracked\n"), 0o644)
	git(t, clone, "worktree", "add", "-q", "-b", "out", filepath.Join(base, "clone-out"))
	git(t, ext, "worktree", "add", "-q", "-b", "ext-wt", filepath.Join(root, "ext-wt"))
	repos := []string{".", "sub", "sub-abs", "sub-wt", "vendor/clone", "vendor/clone-feat"}
	want := map[string]string{}
	for _, dir := range repos {
		want[dir] = gitState(t, filepath.Join(root, dir))
	}
	// As here, but the clone's worktree beside the tree. (git lists a
	// submodule's own work tree as its git directory.)
	wantWorktrees := map[string][]string{
		"sub":          {".git/modules/sub", "sub-wt"},
		"vendor/clone": {"vendor/clone", "vendor/clone-feat"},
	}
	if l := worktreeList(t, clone, root); !slices.Equal(l, append(wantWorktrees["vendor/clone"], "../clone-out")) {
		t.Fatalf("git worktree list here in the clone: %v", l)
	}
	if diff := cmp.Diff(wantWorktrees["sub"], worktreeList(t, filepath.Join(root, "sub"), root)); diff != "" {
		t.Fatalf("git worktree list here in sub (-want +got):\n%s", diff)
	}

	wantWarn := []string{
		"vendor/clone/.git/worktrees/clone-out: linked worktree " + filepath.Join(base, "clone-out") + " is not in the tree, left out (git in the sandbox would show it prunable)",
		"ext-wt/.git: names " + filepath.Join(ext, ".git", "worktrees", "ext-wt") + ", which is not in the tree, sent as it is (git in the sandbox does not work in ext-wt)",
	}
	for _, all := range []bool{false, true} {
		tree, err := ListTree(context.Background(), root, all)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantWarn, tree.Skipped); diff != "" {
			t.Errorf("all=%v: warnings (-want +got):\n%s", all, diff)
		}
		if link := tree.data["vendor/clone-feat/.git"]; string(link) != "gitdir: /workspace/app/vendor/clone/.git/worktrees/clone-feat\n" {
			t.Errorf("all=%v: vendor/clone-feat/.git goes as %q", all, link)
		}
	}

	got := sendTree(t, root)
	top := path.Join(SandboxHome, "app")
	for file, link := range map[string]string{
		"sub/.git":               "gitdir: ../.git/modules/sub\n",
		"sub-abs/.git":           "gitdir: " + top + "/.git/modules/sub-abs\n",
		"sub-wt/.git":            "gitdir: " + top + "/.git/modules/sub/worktrees/sub-wt\n",
		"vendor/clone-feat/.git": "gitdir: " + top + "/vendor/clone/.git/worktrees/clone-feat\n",
		".git/modules/sub/worktrees/sub-wt/gitdir":      top + "/sub-wt/.git\n",
		"vendor/clone/.git/worktrees/clone-feat/gitdir": top + "/vendor/clone-feat/.git\n",
	} {
		if b, err := os.ReadFile(filepath.Join(got, file)); err != nil || string(b) != link {
			t.Errorf("the sandbox's %s = %q, %v; want %q", file, b, err, link)
		}
	}
	for module, wt := range map[string]string{"sub": "../../../sub", "sub-abs": top + "/sub-abs"} {
		if s := git(t, got, "config", "--file", ".git/modules/"+module+"/config", "core.worktree"); s != wt {
			t.Errorf("the sandbox's submodule %s has core.worktree %q, want %q", module, s, wt)
		}
	}
	if _, err := os.Stat(filepath.Join(got, "vendor/clone/.git/worktrees/clone-out")); err == nil {
		t.Error("the sandbox has the directory of the clone's worktree beside the tree")
	}

	// Git here, on the copy as if it were at its sandbox path, with this
	// machine's repositories moved away.
	rehome(t, got, top)
	moveAway(t, root, lib, ext)
	for _, dir := range repos {
		if s := gitState(t, filepath.Join(got, dir)); s != want[dir] {
			t.Errorf("git in %s of the sandbox's copy:\n%s\nwant, as here:\n%s", dir, s, want[dir])
		}
	}
	for dir, wts := range wantWorktrees {
		if diff := cmp.Diff(wts, worktreeList(t, filepath.Join(got, dir), got)); diff != "" {
			t.Errorf("git worktree list in the sandbox's %s (-want +got):\n%s", dir, diff)
		}
	}
}

// TestLinkedWorktreeSubmodule: the submodule of a linked worktree handed
// off (git keeps its repository in <repo>/.git/worktrees/<n>/modules, and
// links both ways relative to there, out of the tree) arrives linked to
// the copy of that repository the tree's own .git directory carries.
// Before, its .git file and core.worktree named paths beside the tree and
// git in it failed.
func TestLinkedWorktreeSubmodule(t *testing.T) {
	base, lib, root := newSuperproject(t)
	wt := filepath.Join(base, "wt")
	git(t, root, "worktree", "add", "-q", "-b", "wt", wt)
	git(t, wt, "submodule", "update", "-q", "--init")
	os.WriteFile(filepath.Join(wt, "sub", "lib.go"), []byte("package lib // edited\n"), 0o644)
	want := map[string]string{".": gitState(t, wt), "sub": gitState(t, filepath.Join(wt, "sub"))}

	got := sendTree(t, wt)
	top := path.Join(SandboxHome, "wt")
	if b, err := os.ReadFile(filepath.Join(got, "sub", ".git")); err != nil || string(b) != "gitdir: "+top+"/.git/modules/sub\n" {
		t.Errorf("the sandbox's sub/.git = %q, %v; want it to name %s/.git/modules/sub", b, err, top)
	}
	rehome(t, got, top)
	moveAway(t, root, lib)
	for dir, w := range want {
		if s := gitState(t, filepath.Join(got, dir)); s != w {
			t.Errorf("git in %s of the sandbox's copy:\n%s\nwant, as here:\n%s", dir, s, w)
		}
	}
}

// TestRepoLink: what a link git wrote says in the sandbox. One naming an
// entry of the tree names it at its sandbox path, or holds as it is when
// relative and naming the same entry there; one naming anything else is
// not in the tree. Paths are found through a symlink to the tree and in
// the repository a linked worktree's .git brings in (src).
func TestRepoLink(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "app")
	for _, d := range []string{"sub", ".git/modules/sub", "wt", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(root, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	brought := filepath.Join(base, "main", ".git", "worktrees", "app", "modules", "lib")
	tree := &Tree{
		Root: root, Name: "app",
		Entries: []string{"sub/.git", "sub/a.go", ".git/modules/sub/HEAD", "wt/.git", ".git/modules/lib"},
		src:     map[string]string{".git/modules/lib": brought},
	}
	loc := tree.locator()
	for _, tc := range []struct {
		name, dir, local, target string
		want                     string
		ok                       bool
	}{
		{"relative, the same in the sandbox", "sub", "sub", "../.git/modules/sub", "", true},
		{"absolute", "sub", "sub", filepath.Join(root, ".git/modules/sub"), "/workspace/app/.git/modules/sub", true},
		{"absolute through a symlink", "sub", "sub", filepath.Join(base, "link", ".git/modules/sub"), "/workspace/app/.git/modules/sub", true},
		{"a directory git lists files of", ".git/modules/sub", ".git/modules/sub", filepath.Join(root, "sub"), "/workspace/app/sub", true},
		{"the tree's top", ".git", ".git", root, "/workspace/app", true},
		{"relative out of the tree, into what src brings", "lib", "lib", "../../main/.git/worktrees/app/modules/lib", "/workspace/app/.git/modules/lib", true},
		{"absolute, into what src brings", "lib", "lib", brought, "/workspace/app/.git/modules/lib", true},
		{"a directory the tree does not carry", "sub", "sub", filepath.Join(root, "other"), "", false},
		{"outside the tree", "sub", "sub", filepath.Join(base, "elsewhere", ".git"), "", false},
		{"relative, outside the tree", "sub", "sub", "../../elsewhere/.git", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link, ok := loc.link(tc.dir, filepath.Join(root, tc.local), tc.target)
			if link != tc.want || ok != tc.ok {
				t.Errorf("link(%q, %q) = %q, %v; want %q, %v", tc.dir, tc.target, link, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestEditGitConfigError: a git config that fails says why, with git's
// own message, not only its exit status; the not-set status is no error.
func TestEditGitConfigError(t *testing.T) {
	tests := []struct {
		name, config string
		notSet       int
		args         []string
		want         string // in the error; "" for none
	}{
		{"bad line", "[core\n\tworktree = x\n", 1, []string{"--get", "core.worktree"}, "bad config line 1"},
		{"not set", "[core]\n\tbare = false\n", 1, []string{"--get", "core.worktree"}, ""},
		{"unset not set", "[core]\n\tbare = false\n", 5, []string{"--unset-all", "core.worktree"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := editGitConfig([]byte(tt.config), tt.notSet, tt.args...)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("editGitConfig: %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("editGitConfig: %v, want an error with %q", err, tt.want)
			}
		})
	}
}
