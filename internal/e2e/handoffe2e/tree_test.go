package handoffe2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
	"github.com/boxkite/boxkite/handoff/handofftest"
)

func download(t *testing.T, c *client.Client, id, p string) []byte {
	t.Helper()
	d, err := c.DownloadFile(context.Background(), id, p)
	if err != nil {
		t.Fatalf("download %s: %v", p, err)
	}
	defer d.Close()
	b, err := io.ReadAll(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sandboxSrc is the fixture's project in the sandbox.
const sandboxSrc = "/workspace/my_app.v2"

// checkTree compares the sandbox's copy of the project with the source:
// every file git keeps (ignored ones excluded, .git included) byte for
// byte with its mode, symlinks as symlinks; the links of the linked
// worktree inside it name its sandbox paths, and git there lists it (and
// not the one outside the project) and works in it.
func checkTree(t *testing.T, c *client.Client, id string, fx *handofftest.Fixture) {
	t.Helper()
	want, err := handoff.ListTree(context.Background(), fx.Src, false)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]bool{innerWorktree + "/.git": true, ".git/worktrees/inner/gitdir": true}
	d, err := c.DownloadArchive(context.Background(), id, sandboxSrc)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := map[string]*tar.Header{}
	bodies := map[string][]byte{}
	tr := tar.NewReader(d)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(path.Clean(hdr.Name), "/")
		got[name] = hdr
		if bodies[name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range want.Entries {
		local := filepath.Join(fx.Src, filepath.FromSlash(rel))
		fi, err := os.Lstat(local)
		if err != nil {
			t.Fatal(err)
		}
		hdr, ok := got[rel]
		switch {
		case !ok:
			t.Errorf("the sandbox lacks %s", rel)
		case fi.Mode()&fs.ModeSymlink != 0:
			link, _ := os.Readlink(local)
			if hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != link {
				t.Errorf("%s is not the symlink to %s it was", rel, link)
			}
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(local)
			if links[rel] {
				b = bytes.ReplaceAll(b, []byte(fx.Src), []byte(sandboxSrc))
				delete(links, rel)
			}
			if !bytes.Equal(bodies[rel], b) {
				t.Errorf("%s differs from the source", rel)
			}
			if fs.FileMode(hdr.Mode).Perm() != fi.Mode().Perm() {
				t.Errorf("%s has mode %o, want %o", rel, hdr.Mode, fi.Mode().Perm())
			}
		}
	}
	for _, rel := range append([]string{"hosts"}, fx.Ignored...) {
		if _, ok := got[rel]; ok {
			t.Errorf("the sandbox has %s, which should have stayed behind", rel)
		}
	}
	if _, ok := got[".git/HEAD"]; !ok {
		t.Error("the sandbox lacks .git")
	}
	if len(links) != 0 {
		t.Errorf("the tree does not send the inner worktree's links %v", links)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.Exec(ctx, id, api.ExecRequest{
		Command: "git worktree list --porcelain | grep -e '^worktree' -e '^prunable' && git -C " + innerWorktree + " rev-parse --abbrev-ref HEAD",
		Cwd:     sandboxSrc, Timeout: 60,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantGit := "worktree " + sandboxSrc + "\nworktree " + sandboxSrc + "/" + innerWorktree + "\n" + innerBranch + "\n"
	if res.ExitCode != 0 || res.Stdout != wantGit {
		t.Errorf("git in the sandbox: exit %d, stdout %q, stderr %q; want %q", res.ExitCode, res.Stdout, res.Stderr, wantGit)
	}
}

// checkAudit reads the sandbox's whole audit log, once it holds both
// uploads and the end of the terminal session that typed the run line,
// and looks for the credential values in it.
func checkAudit(t *testing.T, c *client.Client, id string, secrets []string) {
	t.Helper()
	var all []byte
	defer func() {
		if t.Failed() {
			t.Logf("audit log: %s", all)
		}
	}()
	waitFor(t, "the audit log to record the uploads and the terminal session", func() bool {
		page, err := c.Log(context.Background(), id, api.MaxLogLimit, 0)
		if err != nil {
			return false
		}
		all, _ = json.Marshal(page)
		return bytes.Count(all, []byte(`"archive_upload"`)) >= 2 && bytes.Contains(all, []byte(`"takeover_end"`))
	})
	for _, v := range secrets {
		if bytes.Contains(all, []byte(v)) {
			t.Errorf("the audit log holds a credential value")
		}
	}
}
