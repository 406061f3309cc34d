package handoff

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Uploader extracts a tar stream under a sandbox directory; the CLI binds
// the client's UploadArchive (POST …/files/archive) to one sandbox. Its
// audit entry records the path, never the bytes.
type Uploader interface {
	UploadArchive(ctx context.Context, dir string, r io.Reader) (*api.ArchiveResult, error)
}

// Result is what Transfer did.
type Result struct {
	Files int   // files extracted in the sandbox
	Bytes int64 // their bytes
	// Source is the line to run in the sandbox's shell: it sources the
	// credentials, removes them from disk, and resumes. It names a path
	// only, so it is safe to type (typed input is audited).
	Source string
}

// secretParent is where the credentials file goes: outside /workspace,
// which may be downloaded or kept, and removed by the run script.
const secretParent = "/tmp"

// Size is what Transfer will send, roughly (tar headers not counted), for
// a progress bar.
func (p *Plan) Size() int64 {
	n := p.Tree.Bytes
	for _, f := range p.Files {
		n += f.Size
	}
	return n
}

// Transfer streams the tree and the staged session files into the sandbox
// as one archive (wrap, if set, sees the stream: progress), then uploads
// the credentials and the run script to a fresh 0700 directory in /tmp.
// Session files are 0600 and dated now: Claude Code deletes transcripts
// older than its cleanup period at startup.
func Transfer(ctx context.Context, p *Plan, up Uploader, wrap func(io.Reader) io.Reader) (*Result, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(p.writeArchive(pw)) }()
	var r io.Reader = pr
	if wrap != nil {
		r = wrap(r)
	}
	res, err := up.UploadArchive(ctx, SandboxHome, r)
	pr.CloseWithError(err) // stops the writer if the upload ended early
	if err != nil {
		return nil, fmt.Errorf("upload the working tree and session: %w", err)
	}
	out := &Result{Files: res.Files, Bytes: res.Bytes}
	dir, arch, err := p.secretArchive()
	if err != nil {
		return nil, err
	}
	if _, err := up.UploadArchive(ctx, secretParent, bytes.NewReader(arch)); err != nil {
		return nil, fmt.Errorf("upload the resume script: %w", err)
	}
	out.Source = ". " + path.Join(dir, "run")
	return out, nil
}

func (p *Plan) writeArchive(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, rel := range p.Tree.Entries {
		if err := p.Tree.writeEntry(tw, p.Tree.Name, rel); err != nil {
			return err
		}
	}
	now := time.Now()
	for _, f := range p.Files {
		if err := writeStaged(tw, f, now); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeStaged(tw *tar.Writer, f StagedFile, now time.Time) error {
	in, err := os.Open(f.Staged)
	if err != nil {
		return err
	}
	defer in.Close()
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Target, SandboxHome+"/"),
		Mode: 0o600, Size: f.Size, ModTime: now, Format: tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, in, f.Size); err != nil {
		return fmt.Errorf("read %s: %w", f.Staged, err)
	}
	return nil
}

// secretArchive builds, in memory only, the tar of the credentials
// directory: env (the credentials as shell assignments) and run (the
// script the shell sources), both 0600, in a 0700 directory with a random
// name. It returns the directory's sandbox path.
func (p *Plan) secretArchive() (string, []byte, error) {
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", nil, err
	}
	name := ".boxkite-handoff-" + hex.EncodeToString(rnd[:])
	dir := path.Join(secretParent, name)
	var env bytes.Buffer
	for _, c := range p.Credentials {
		fmt.Fprintf(&env, "%s=%s\n", c.Name, shellQuote(c.Value))
	}
	run := p.runScript(dir)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	entries := []struct {
		name string
		body []byte
	}{{"env", env.Bytes()}, {"run", []byte(run)}}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o700, ModTime: now}); err != nil {
		return "", nil, err
	}
	for _, e := range entries {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name + "/" + e.name, Mode: 0o600, Size: int64(len(e.body)), ModTime: now}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return "", nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return "", nil, err
	}
	return dir, buf.Bytes(), nil
}

// runScript is sourced by the sandbox's shell: it exports the credentials
// (set -a) so the tool sees them, removes them from disk before anything
// else runs, and resumes the session.
func (p *Plan) runScript(dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# boxkite handoff: %s session %s; sourced once, then removed\n", p.Tool, p.Session.ID)
	fmt.Fprintf(&b, "set -a\n. %s\nset +a\n", shellQuote(path.Join(dir, "env")))
	fmt.Fprintf(&b, "rm -rf %s\n", shellQuote(dir))
	fmt.Fprintf(&b, "%s\n", p.Resume)
	return b.String()
}
