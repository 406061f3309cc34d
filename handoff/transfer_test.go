package handoff

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff/handofftest"
)

// entry is one archive member as an upload received it.
type entry struct {
	hdr  *tar.Header
	body []byte
}

// recorder is a Sandbox that keeps what it is sent and holds existing
// files to read.
type recorder struct {
	dirs     []string
	archives []map[string]entry
	existing map[string][]byte
}

func (r *recorder) ReadFile(_ context.Context, p string) ([]byte, error) {
	return r.existing[p], nil
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
	res, err := Transfer(context.Background(), p, &rec, "sbx1", nil)
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
	if e := secret[".boxkite-handoff/"]; e.hdr == nil || e.hdr.Mode != 0o700 {
		t.Fatalf("the handoff directory is missing or not 0700: %+v", e.hdr)
	}
	for _, name := range []string{"env", "run", "handoff.json"} {
		if e := secret[".boxkite-handoff/"+name]; e.hdr == nil || e.hdr.Mode != 0o600 {
			t.Errorf("%s is missing or not 0600", name)
		}
	}
	if res.Source != ". /tmp/.boxkite-handoff/run" {
		t.Errorf("source line = %q", res.Source)
	}
	for _, name := range []string{"run", "handoff.json"} {
		if bytes.Contains(secret[".boxkite-handoff/"+name].body, []byte("ecret")) {
			t.Errorf("the credential value is in %s, outside the env file", name)
		}
	}
	// The env file, sourced by a real shell, gives back the exact value.
	env := t.TempDir() + "/env"
	if err := os.WriteFile(env, secret[".boxkite-handoff/env"].body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", `set -a; . "$1"; set +a; printf %s "$ANTHROPIC_API_KEY"`, "sh", env).Output()
	if err != nil || string(out) != p.Credentials[0].Value {
		t.Errorf("sourced value = %q, %v; want %q", out, err, p.Credentials[0].Value)
	}
	var got Record
	if err := json.Unmarshal(secret[".boxkite-handoff/handoff.json"].body, &got); err != nil {
		t.Fatal(err)
	}
	want := Record{Tool: "claude-code", Session: handofftest.ClaudeSession, CLI: "claude", Workdir: sandboxRoot, Sandbox: "sbx1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	rec.existing = map[string][]byte{HandoffDir + "/handoff.json": secret[".boxkite-handoff/handoff.json"].body}
	if r, err := ReadRecord(context.Background(), &rec); err != nil || *r != want {
		t.Errorf("ReadRecord = %+v, %v", r, err)
	}
}

// TestTransferMergesState: handing off into a sandbox that has its own
// ~/.claude.json (a login made there, another project's trust) keeps it,
// with the handoff's keys added.
func TestTransferMergesState(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "claude-code", "", "ANTHROPIC_API_KEY", "sk-ant-0123456789abcdefghijKLMNOPQRSTUVWXYZ")
	rec := recorder{existing: map[string][]byte{
		"/workspace/.claude.json": []byte(`{"oauthAccount":{"emailAddress":"a@example.com"},"numStartups":7,"projects":{"/workspace/other":{"hasTrustDialogAccepted":true,"allowedTools":["Bash"]},"/workspace/my_app.v2":{"allowedTools":["Edit"]}},"customApiKeyResponses":{"approved":["x"],"rejected":["ABCDEFGHIJKLMNOPQRSTUVWXYZ"]}}`),
	}}
	if _, err := Transfer(context.Background(), p, &rec, "sbx1", nil); err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(rec.archives[0][".claude.json"].body, &state); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"oauthAccount": map[string]any{"emailAddress": "a@example.com"}, "numStartups": float64(7),
		"hasCompletedOnboarding": true,
		"projects": map[string]any{
			"/workspace/other":     map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []any{"Bash"}},
			"/workspace/my_app.v2": map[string]any{"hasTrustDialogAccepted": true, "allowedTools": []any{"Edit"}},
		},
		"customApiKeyResponses": map[string]any{"approved": []any{"x", "ghijKLMNOPQRSTUVWXYZ"}, "rejected": []any{"ABCDEFGHIJKLMNOPQRSTUVWXYZ"}},
	}
	if diff := cmp.Diff(want, state); diff != "" {
		t.Errorf("merged .claude.json (-want +got):\n%s", diff)
	}
	rec = recorder{existing: map[string][]byte{"/workspace/.claude.json": []byte("not json")}}
	_, err := Transfer(context.Background(), p, &rec, "sbx1", nil)
	if e, ok := errors.AsType[*Error](err); !ok || e.Hint == "" {
		t.Errorf("Transfer over a broken .claude.json = %v, want an error with a hint", err)
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

// TestTransferCreatesWorkdir: the directory the session resumes in may
// hold nothing the tree sends (a new, still empty package git does not
// list, or one removed since); the archive creates it, else the run
// script's cd fails and the tool never starts. A working directory the
// tree already fills gets no entry of its own (its mode and time stay).
func TestTransferCreatesWorkdir(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "claude-code", "")
	covered := p.Workdir
	p.Workdir = SandboxHome + "/" + p.Tree.Name + "/new pkg/ü"
	var rec recorder
	if _, err := Transfer(context.Background(), p, &rec, "sbx1", nil); err != nil {
		t.Fatal(err)
	}
	e, ok := rec.archives[0][p.Tree.Name+"/new pkg/ü/"]
	if !ok || e.hdr.Typeflag != tar.TypeDir || e.hdr.Mode != 0o755 {
		t.Fatalf("the archive does not create the working directory %s: %+v", p.Workdir, e.hdr)
	}

	p.Workdir = covered
	rec = recorder{}
	if _, err := Transfer(context.Background(), p, &rec, "sbx1", nil); err != nil {
		t.Fatal(err)
	}
	for name, e := range rec.archives[0] {
		if e.hdr.Typeflag == tar.TypeDir && !slices.Contains(p.Tree.Entries, strings.TrimSuffix(strings.TrimPrefix(name, p.Tree.Name+"/"), "/")) {
			t.Errorf("the archive has a directory entry %s the tree does not list", name)
		}
	}
}
