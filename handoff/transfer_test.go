package handoff

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff/handofftest"
)

// entry is one archive member as an upload received it.
type entry struct {
	hdr  *tar.Header
	body []byte
}

// recorder is an Uploader that keeps what it is sent.
type recorder struct {
	dirs     []string
	archives []map[string]entry
}

func (r *recorder) UploadArchive(_ context.Context, dir string, rd io.Reader) (*api.ArchiveResult, error) {
	got := map[string]entry{}
	tr := tar.NewReader(rd)
	res := &api.ArchiveResult{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		got[hdr.Name] = entry{hdr, b}
		if hdr.Typeflag == tar.TypeReg {
			res.Files++
			res.Bytes += int64(len(b))
		}
	}
	r.dirs = append(r.dirs, dir)
	r.archives = append(r.archives, got)
	return res, nil
}

func TestTransfer(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "claude-code", "", "ANTHROPIC_API_KEY", "it's a $ecret `x`\nline two")
	start := time.Now().Add(-time.Second)
	var rec recorder
	res, err := Transfer(context.Background(), p, &rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.dirs) != 2 || rec.dirs[0] != SandboxHome || rec.dirs[1] != "/tmp" {
		t.Fatalf("uploads went to %v, want /workspace then /tmp", rec.dirs)
	}
	tree := rec.archives[0]
	for _, rel := range p.Tree.Entries {
		e, ok := tree["my_app.v2/"+rel]
		if !ok {
			if _, isDir := tree["my_app.v2/"+rel+"/"]; !isDir {
				t.Errorf("archive lacks my_app.v2/%s", rel)
			}
			continue
		}
		if e.hdr.Typeflag == tar.TypeReg {
			want, _ := os.ReadFile(fx.Src + "/" + rel)
			if !bytes.Equal(e.body, want) {
				t.Errorf("my_app.v2/%s differs from the source", rel)
			}
		}
	}
	if e := tree["my_app.v2/run.sh"]; e.hdr == nil || e.hdr.Mode&0o777 != 0o755 {
		t.Errorf("run.sh lost its mode")
	}
	if e := tree["my_app.v2/link.go"]; e.hdr == nil || e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != "main.go" {
		t.Errorf("link.go is not the symlink it was")
	}
	for _, f := range p.Files {
		e, ok := tree[strings.TrimPrefix(f.Target, SandboxHome+"/")]
		switch {
		case !ok:
			t.Errorf("archive lacks %s", f.Target)
		case e.hdr.Mode != 0o600:
			t.Errorf("%s has mode %o, want 600", f.Target, e.hdr.Mode)
		case e.hdr.ModTime.Before(start):
			t.Errorf("%s is dated %v, want now (Claude Code deletes old transcripts)", f.Target, e.hdr.ModTime)
		}
	}

	secret := rec.archives[1]
	var dir string
	for name, e := range secret {
		if e.hdr.Typeflag == tar.TypeDir {
			dir = strings.TrimSuffix(name, "/")
			if e.hdr.Mode != 0o700 {
				t.Errorf("credentials directory mode %o, want 700", e.hdr.Mode)
			}
		} else if e.hdr.Mode != 0o600 {
			t.Errorf("%s mode %o, want 600", name, e.hdr.Mode)
		}
	}
	if !strings.HasPrefix(dir, ".boxkite-handoff-") {
		t.Fatalf("credentials directory %q", dir)
	}
	if want := ". /tmp/" + dir + "/run"; res.Source != want {
		t.Errorf("source line = %q, want %q", res.Source, want)
	}
	if strings.Contains(res.Source, "ecret") || bytes.Contains(secret[dir+"/run"].body, []byte("ecret")) {
		t.Error("the credential value is outside the env file")
	}
	// The env file, sourced by a real shell, gives back the exact value.
	env := t.TempDir() + "/env"
	if err := os.WriteFile(env, secret[dir+"/env"].body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", `set -a; . "$1"; set +a; printf %s "$ANTHROPIC_API_KEY"`, "sh", env).Output()
	if err != nil || string(out) != p.Credentials[0].Value {
		t.Errorf("sourced value = %q, %v; want %q", out, err, p.Credentials[0].Value)
	}
	run := string(secret[dir+"/run"].body)
	for _, want := range []string{"rm -rf '/tmp/" + dir + "'", p.Resume} {
		if !strings.Contains(run, want) {
			t.Errorf("run script lacks %q:\n%s", want, run)
		}
	}
}

func TestResumeLine(t *testing.T) {
	tests := []struct {
		workdir string
		cmds    [][]string
		want    string
		wantErr bool
	}{
		{"/workspace/a b", [][]string{{"claude", "--resume", "x"}}, `cd '/workspace/a b' && claude --resume x`, false},
		{"/workspace/it's", [][]string{{"a"}, {"b", "/workspace/f.json"}}, `cd '/workspace/it'\''s' && a && b /workspace/f.json`, false},
		{"/workspace", [][]string{{"claude", "x;y"}}, "", true},
		{"/workspace", [][]string{{"claude", "$(id)"}}, "", true},
		{"/workspace/x\ny", [][]string{{"a"}}, "", true},
		{"/etc", [][]string{{"a"}}, "", true},
	}
	for _, tt := range tests {
		got, err := resumeLine(tt.workdir, tt.cmds)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("resumeLine(%q, %q) = %q, %v; want %q, error %v", tt.workdir, tt.cmds, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "plain", "it's", `"$HOME" $(id) ` + "`x`", "a\nb", `\'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := shellQuote(s)
		// A single-quoted word ends at the next quote; the only quotes
		// inside must be the '\'' sequences.
		inner := strings.TrimSuffix(strings.TrimPrefix(q, "'"), "'")
		if strings.ReplaceAll(inner, `'\''`, "") != strings.ReplaceAll(s, "'", "") {
			t.Fatalf("shellQuote(%q) = %q", s, q)
		}
	})
}

func FuzzLinkInside(f *testing.F) {
	f.Add("a/b", "../c")
	f.Add("a", "../../x")
	f.Add("a", "/etc/hosts")
	f.Add("d/a", "x/../../y")
	f.Fuzz(func(t *testing.T, rel, target string) {
		if rel == "" || path.Clean(rel) != rel || path.IsAbs(rel) || strings.HasPrefix(rel, "..") || strings.IndexByte(target, 0) >= 0 {
			return
		}
		// Anchored at a root, a join cannot climb above it: the link
		// stays inside exactly when the result stays below /root.
		abs := path.Join("/root", path.Dir(rel), target)
		want := !path.IsAbs(target) && (abs == "/root" || strings.HasPrefix(abs, "/root/"))
		if got := linkInside(rel, target); got != want {
			t.Fatalf("linkInside(%q, %q) = %v, want %v", rel, target, got, want)
		}
	})
}
