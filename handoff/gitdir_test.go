package handoff

import (
	"archive/tar"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// git runs git in dir with a configuration of the test's own.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// sendTree lists the tree at root as a handoff does, writes it as the
// archive would and unpacks it into a new directory, returned: what the
// sandbox would have.
func sendTree(t *testing.T, root string) string {
	t.Helper()
	tree, err := ListTree(context.Background(), root, false)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "tree.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, rel := range tree.Entries {
		if err := tree.writeEntry(tw, tree.Name, rel); err != nil {
			t.Fatalf("write %s: %v", rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst := t.TempDir()
	if out, err := exec.Command("tar", "-C", dst, "-xf", archive).CombinedOutput(); err != nil {
		t.Fatalf("unpack: %v\n%s", err, out)
	}
	return filepath.Join(dst, tree.Name)
}

// TestLinkedWorktreeGitDir: a tree whose .git is a file naming a
// repository outside it (a linked worktree, of a plain or a bare
// repository, or a submodule's checkout) arrives with a .git directory
// that is a repository of its own: the worktree's branch, history, staged
// change and untracked file as git shows them here. Before, the .git file
// went as it was and git in the sandbox failed ("not a git repository:
// /…/.git/worktrees/…").
func TestLinkedWorktreeGitDir(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Fatal("tar is needed to unpack the archive")
	}
	base := t.TempDir()
	main := filepath.Join(base, "main")
	git(t, base, "init", "-q", main)
	os.WriteFile(filepath.Join(main, "a.txt"), []byte("one\n"), 0o644)
	git(t, main, "add", "a.txt")
	git(t, main, "commit", "-qm", "first")
	bare := filepath.Join(base, "bare.git")
	git(t, base, "clone", "-q", "--bare", main, bare)

	for _, tc := range []struct{ name, repo, dir, branch string }{
		{"worktree", main, filepath.Join(base, "wt ü"), "feat"},
		{"worktree of a bare repository", bare, filepath.Join(base, "wt-bare"), "feat-bare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			git(t, tc.repo, "worktree", "add", "-q", "-b", tc.branch, tc.dir)
			os.WriteFile(filepath.Join(tc.dir, "a.txt"), []byte("two\n"), 0o644)
			git(t, tc.dir, "commit", "-qam", "second")
			os.WriteFile(filepath.Join(tc.dir, "b.txt"), []byte("staged\n"), 0o644)
			git(t, tc.dir, "add", "b.txt")
			os.WriteFile(filepath.Join(tc.dir, "c.txt"), []byte("untracked\n"), 0o644)
			want := gitState(t, tc.dir)
			// The repository moves away: the copy must not lean on it.
			got := sendTree(t, tc.dir)
			if fi, err := os.Lstat(filepath.Join(got, ".git")); err != nil || !fi.IsDir() {
				t.Fatalf(".git in the sandbox is not a directory: %v", err)
			}
			os.Rename(tc.repo, tc.repo+".gone")
			defer os.Rename(tc.repo+".gone", tc.repo)
			if s := gitState(t, got); s != want {
				t.Errorf("git in the sandbox:\n%s\nwant, as here:\n%s", s, want)
			}
		})
	}

	t.Run("submodule", func(t *testing.T) {
		super := filepath.Join(base, "super")
		git(t, base, "init", "-q", super)
		git(t, super, "submodule", "add", "-q", main, "sub")
		git(t, super, "commit", "-qm", "sub")
		sub := filepath.Join(super, "sub")
		os.WriteFile(filepath.Join(sub, "d.txt"), []byte("untracked\n"), 0o644)
		want := gitState(t, sub)
		got := sendTree(t, sub)
		os.Rename(super, super+".gone")
		defer os.Rename(super+".gone", super)
		if s := gitState(t, got); s != want {
			t.Errorf("git in the sandbox:\n%s\nwant, as here:\n%s", s, want)
		}
	})
}

// gitState is what git says of the work tree at dir: branch, history and
// status.
func gitState(t *testing.T, dir string) string {
	t.Helper()
	return strings.Join([]string{
		git(t, dir, "rev-parse", "--abbrev-ref", "HEAD"),
		git(t, dir, "log", "--format=%s"),
		git(t, dir, "status", "--porcelain"),
	}, "\n")
}

// TestBrokenGitFileWithAll: with --all, a .git file naming a repository
// that is gone goes as it is, with a warning, rather than failing the
// handoff --all is the way out of.
func TestBrokenGitFileWithAll(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: /nonexistent/.git/worktrees/x\n"), 0o644)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	tree, err := ListTree(context.Background(), root, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tree.Entries, ".git") || tree.Files != 2 {
		t.Errorf("entries %v (%d files), want .git and a.txt", tree.Entries, tree.Files)
	}
	if len(tree.Skipped) != 1 || !strings.HasPrefix(tree.Skipped[0], ".git: names a repository git cannot open here") {
		t.Errorf("warnings %q, want one about .git", tree.Skipped)
	}
}

// TestForeignGitDirNotSent: a .git file naming a repository that is not
// this tree's (one the tree came with: an archive, or files copied back
// out of a sandbox) does not bring that repository along. A repository's
// own directory, another worktree's directory and another submodule's
// directory each go as the file they are, with a warning; before, each
// was copied into the sandbox whole, objects and all, from wherever on
// this machine the file pointed.
func TestForeignGitDirNotSent(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	git(t, base, "init", "-q", victim)
	os.WriteFile(filepath.Join(victim, "private.txt"), []byte("private\n"), 0o644)
	git(t, victim, "add", "private.txt")
	git(t, victim, "commit", "-qm", "private history")
	git(t, victim, "worktree", "add", "-q", "-b", "other", filepath.Join(base, "other-wt"))
	super := filepath.Join(base, "super")
	git(t, base, "init", "-q", super)
	git(t, super, "submodule", "add", "-q", victim, "sub")

	for _, tc := range []struct{ name, gitdir string }{
		{"a repository", filepath.Join(victim, ".git")},
		{"a relative path to a repository", "../victim/.git"},
		{"another worktree's directory", filepath.Join(victim, ".git", "worktrees", "other-wt")},
		{"another submodule's directory", filepath.Join(super, ".git", "modules", "sub")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "project")
			os.MkdirAll(root, 0o755)
			if rel, ok := strings.CutPrefix(tc.gitdir, "../"); ok {
				// A relative gitdir is read from the tree's own directory.
				root = filepath.Join(base, "project-"+strings.ReplaceAll(tc.name, " ", "-"))
				os.MkdirAll(root, 0o755)
				tc.gitdir = "../" + rel
			}
			os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: "+tc.gitdir+"\n"), 0o644)
			os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
			for _, all := range []bool{false, true} {
				tree, err := ListTree(context.Background(), root, all)
				if err != nil {
					t.Fatalf("all=%v: %v", all, err)
				}
				for _, e := range tree.Entries {
					if strings.HasPrefix(e, ".git/") {
						t.Fatalf("all=%v: the tree sends %s, from %s", all, e, tree.local(e))
					}
				}
				if !slices.Contains(tree.Entries, ".git") || tree.local(".git") != filepath.Join(root, ".git") {
					t.Errorf("all=%v: entries %v; want the .git file as it is", all, tree.Entries)
				}
				if !slices.ContainsFunc(tree.Skipped, func(s string) bool { return strings.HasPrefix(s, ".git: names a repository that is not this tree's") }) {
					t.Errorf("all=%v: warnings %q, want one about .git", all, tree.Skipped)
				}
			}
		})
	}
}

// TestPlantedWorktreeDirNotSent: a tree that came with a .git file and,
// beside it, a directory dressed as a linked worktree's (an archive of
// two folders, one handed off) does not send the repository that
// directory's commondir names. The planted directory names the tree back
// (its gitdir file, relative, needs no absolute path), which is all the
// back-link check asked; git's own worktree directories lie in
// <common>/worktrees/, where nobody but the repository's owner writes.
// Before, the victim repository's objects and refs were copied into the
// sandbox.
func TestPlantedWorktreeDirNotSent(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	git(t, base, "init", "-q", victim)
	os.WriteFile(filepath.Join(victim, "private.txt"), []byte("private\n"), 0o644)
	git(t, victim, "add", "private.txt")
	git(t, victim, "commit", "-qm", "private history")

	unpacked := filepath.Join(base, "download")
	root, planted := filepath.Join(unpacked, "project"), filepath.Join(unpacked, "meta")
	for _, d := range []string{root, planted} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		filepath.Join(root, ".git"):         "gitdir: ../meta\n",
		filepath.Join(root, "a.txt"):        "a\n",
		filepath.Join(planted, "commondir"): "../../victim/.git\n",
		filepath.Join(planted, "gitdir"):    "../project/.git\n",
		filepath.Join(planted, "HEAD"):      "ref: refs/heads/main\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, all := range []bool{false, true} {
		tree, err := ListTree(context.Background(), root, all)
		if err != nil {
			t.Fatalf("all=%v: %v", all, err)
		}
		for _, e := range tree.Entries {
			if l := tree.local(e); strings.HasPrefix(l, victim+string(filepath.Separator)) {
				t.Fatalf("all=%v: the tree sends %s, from the victim repository's %s", all, e, l)
			}
		}
		if !slices.ContainsFunc(tree.Skipped, func(s string) bool { return strings.HasPrefix(s, ".git: names a repository that is not this tree's") }) {
			t.Errorf("all=%v: warnings %q, want one about .git", all, tree.Skipped)
		}
	}
}

// TestNestedRepoIgnores: a repository inside the tree (a clone made
// there, a submodule's checkout) goes with what its own git lists and its
// .git, and what its .gitignore leaves out stays behind as at the top.
// Before, git listed it as one entry and the whole directory went: build
// output and node_modules of every nested clone too.
func TestNestedRepoIgnores(t *testing.T) {
	base := t.TempDir()
	lib := filepath.Join(base, "lib")
	newRepo(t, lib, map[string]string{".gitignore": "dist/\n", "lib.go": "package lib\n"})
	root := filepath.Join(base, "app")
	newRepo(t, root, map[string]string{"main.go": "package main\n"})
	git(t, root, "submodule", "add", "-q", lib, "sub")
	git(t, root, "clone", "-q", lib, "vendor/clone")
	for _, dir := range []string{"sub", "vendor/clone"} {
		d := filepath.Join(root, filepath.FromSlash(dir))
		os.MkdirAll(filepath.Join(d, "dist"), 0o755)
		os.WriteFile(filepath.Join(d, "dist", "big.out"), []byte("ignored by the nested .gitignore\n"), 0o644)
		os.WriteFile(filepath.Join(d, "new.txt"), []byte("untracked\n"), 0o644)
		os.WriteFile(filepath.Join(d, "lib.go"), []byte("package lib // edited\n"), 0o644)
	}
	tree, err := ListTree(context.Background(), root, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"main.go", "sub/.git", "sub/lib.go", "sub/new.txt", "sub/.gitignore", "vendor/clone/.git", "vendor/clone/.git/HEAD", "vendor/clone/lib.go", "vendor/clone/new.txt"} {
		if !slices.Contains(tree.Entries, want) {
			t.Errorf("the tree does not send %s", want)
		}
	}
	for _, e := range tree.Entries {
		if strings.Contains(e, "dist") {
			t.Errorf("the tree sends %s, which the nested repository's .gitignore leaves out", e)
		}
	}
	got := sendTree(t, root)
	for _, dir := range []string{".", "sub", "vendor/clone"} {
		if a, b := gitState(t, filepath.Join(root, dir)), gitState(t, filepath.Join(got, dir)); a != b {
			t.Errorf("git in %s of the sandbox's copy:\n%s\nwant, as here:\n%s", dir, b, a)
		}
	}
}

// TestNestedForeignRepoNotAsked: a directory in the tree whose .git file
// names a repository elsewhere on this machine (a tree from an archive)
// is not listed by that repository's git: its index names the victim's
// files, and a symlink in the tree where their directory should be would
// have sent them. Nor does a path git lists through a symlinked directory
// (an index entry whose directory became a symlink) go.
func TestNestedForeignRepoNotAsked(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	git(t, base, "init", "-q", victim)
	os.MkdirAll(filepath.Join(victim, "src"), 0o755)
	os.WriteFile(filepath.Join(victim, "src", "secret.txt"), []byte("private\n"), 0o644)
	git(t, victim, "add", "-A")
	git(t, victim, "commit", "-qm", "private")

	root := filepath.Join(base, "download")
	git(t, base, "init", "-q", root)
	os.MkdirAll(filepath.Join(root, "vendor", "x"), 0o755)
	os.WriteFile(filepath.Join(root, "vendor", "x", ".git"), []byte("gitdir: "+filepath.Join(victim, ".git")+"\n"), 0o644)
	os.Symlink(filepath.Join(victim, "src"), filepath.Join(root, "vendor", "x", "src"))
	// The tree's own index names a file below what is now a symlink.
	os.MkdirAll(filepath.Join(root, "lib"), 0o755)
	os.WriteFile(filepath.Join(root, "lib", "secret.txt"), []byte("x\n"), 0o644)
	git(t, root, "add", "lib/secret.txt")
	os.RemoveAll(filepath.Join(root, "lib"))
	os.Symlink(filepath.Join(victim, "src"), filepath.Join(root, "lib"))

	tree, err := ListTree(context.Background(), root, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tree.Entries {
		if strings.HasSuffix(e, "secret.txt") {
			t.Errorf("the tree sends %s, from %s", e, tree.local(e))
		}
	}
	if !slices.Contains(tree.Entries, "vendor/x/.git") {
		t.Errorf("entries %v; want vendor/x/.git as the file it is", tree.Entries)
	}
}
