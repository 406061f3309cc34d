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

// rehome makes the links a handoff wrote for the sandbox path top (the
// tree's .git files and its repository's worktrees/*/gitdir files) name
// the copy at got instead, as if got were at top, so that git can be
// asked about the copy here.
func rehome(t *testing.T, got, top string) {
	t.Helper()
	err := filepath.WalkDir(got, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if link := d.Name() == ".git" || d.Name() == "gitdir" && filepath.Base(filepath.Dir(filepath.Dir(p))) == "worktrees"; !link {
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
