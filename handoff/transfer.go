package handoff

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Sandbox is what a handoff needs of the sandbox it goes to; the CLI
// binds the client to one sandbox. An archive upload's audit entry records
// the path, never the bytes.
type Sandbox interface {
	// UploadArchive extracts a tar stream under dir.
	UploadArchive(ctx context.Context, dir string, r io.Reader) (*api.ArchiveResult, error)
	// ReadFile returns a file's content, or nil and no error when the
	// sandbox has no such file.
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// Result is what Transfer did.
type Result struct {
	Files int   // files extracted in the sandbox
	Bytes int64 // their bytes
	// Source is the line to run in the sandbox's shell: it starts the
	// tool with the credentials set, removing them from disk as it does.
	// It names a path only, so it is safe to type (typed input is audited).
	Source string
}

// HandoffDir is where a handoff leaves what starts the tool: the run
// script, the record --retry reads, and until the tool starts, the env
// file of credentials. One per sandbox: a later handoff replaces it, so
// no earlier credentials stay behind. Outside /workspace, which may be
// downloaded or kept.
const HandoffDir = "/tmp/.boxkite-handoff"

// Source is the line that runs a handoff's script.
const Source = ". " + HandoffDir + "/run"

// Record is what a sandbox keeps of the handoff made into it, for
// --retry: no credential, nothing a local path names.
type Record struct {
	Tool     string `json:"tool"`
	Session  string `json:"session"`
	CLI      string `json:"cli"`
	Workdir  string `json:"workdir"`
	Provider string `json:"provider,omitempty"` // opencode: whose credentials go along
	Sandbox  string `json:"sandbox"`
}

// Size is what Transfer will send, roughly (tar headers not counted), for
// a progress bar.
func (p *Plan) Size() int64 {
	n := p.Tree.Bytes
	for _, f := range p.Files {
		n += f.Size
	}
	return n
}

// Transfer streams the tree and the staged session files into sandbox
// sandboxID as one archive (wrap, if set, sees the stream: progress),
// merging the tool's state files with copies the sandbox already has,
// then leaves the credentials, the run script and the record in
// HandoffDir. Session files are 0600 and dated now: Claude Code deletes
// transcripts older than its cleanup period at startup.
func Transfer(ctx context.Context, p *Plan, sb Sandbox, sandboxID string, wrap func(io.Reader) io.Reader) (*Result, error) {
	merged, err := p.mergeState(ctx, sb)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(p.writeArchive(pw, merged)) }()
	var r io.Reader = pr
	if wrap != nil {
		r = wrap(r)
	}
	res, err := sb.UploadArchive(ctx, SandboxHome, r)
	pr.CloseWithError(err) // stops the writer if the upload ended early
	if err != nil {
		return nil, fmt.Errorf("upload the working tree and session: %w", err)
	}
	rec := Record{Tool: p.Tool, Session: p.Session.ID, CLI: p.CLI, Workdir: p.Workdir, Provider: p.Provider, Sandbox: sandboxID}
	run, err := p.runScript(sandboxID)
	if err != nil {
		return nil, err
	}
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"env": envFile(p.Credentials, p.Settings), "run": []byte(run), "handoff.json": append(recJSON, '\n')}
	if err := uploadHandoffDir(ctx, sb, files); err != nil {
		return nil, err
	}
	return &Result{Files: res.Files, Bytes: res.Bytes, Source: Source}, nil
}

// mergeState reads the sandbox's copies of the tool's state files and
// merges them with the plan's; a new sandbox has none.
func (p *Plan) mergeState(ctx context.Context, sb Sandbox) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range p.Files {
		if f.Merge == nil {
			continue
		}
		existing, err := sb.ReadFile(ctx, f.Target)
		if err != nil {
			return nil, fmt.Errorf("read the sandbox's %s: %w", f.Target, err)
		}
		if existing == nil {
			continue // the staged file is the new one
		}
		b, err := f.Merge(existing)
		if err != nil {
			return nil, &Error{Err: fmt.Errorf("merge into the sandbox's %s: %w", f.Target, err), Hint: "fix or remove that file in the sandbox, then hand off again"}
		}
		out[f.Target] = b
	}
	return out, nil
}

// Rearm leaves fresh credentials for the handoff recorded in the sandbox
// (--retry): the run script and record stay as they are.
func Rearm(ctx context.Context, sb Sandbox, creds []Credential, settings []Setting) error {
	return uploadHandoffDir(ctx, sb, map[string][]byte{"env": envFile(creds, settings)})
}

// ReadRecord reads the record of the handoff made into the sandbox.
func ReadRecord(ctx context.Context, sb Sandbox) (*Record, error) {
	b, err := sb.ReadFile(ctx, HandoffDir+"/handoff.json")
	if err != nil {
		return nil, fmt.Errorf("read %s/handoff.json: %w", HandoffDir, err)
	}
	if b == nil {
		return nil, &Error{Err: errors.New("no handoff was made into this sandbox"), Hint: "hand off into it with boxkite handoff TOOL -s SANDBOX"}
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil || Agents()[rec.Tool].CLI == "" || !ValidIdent(rec.Session) {
		return nil, &Error{Err: fmt.Errorf("%s/handoff.json is not a handoff record", HandoffDir), Hint: "hand off into the sandbox again with boxkite handoff TOOL -s SANDBOX"}
	}
	return &rec, nil
}

func (p *Plan) writeArchive(w io.Writer, merged map[string][]byte) error {
	tw := tar.NewWriter(w)
	for _, rel := range p.Tree.Entries {
		if err := p.Tree.writeEntry(tw, p.Tree.Name, rel); err != nil {
			return err
		}
	}
	now := time.Now()
	if err := p.writeWorkdir(tw, now); err != nil {
		return err
	}
	for _, f := range p.Files {
		if err := writeStaged(tw, f, merged[f.Target], now); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeWorkdir writes a directory entry for the working directory when no
// tree entry lies in it: a directory git does not list (empty, or holding
// ignored files only) or one removed since the session was recorded. The
// run script changes to it before it starts the tool, and Claude Code
// finds a session by it.
func (p *Plan) writeWorkdir(tw *tar.Writer, now time.Time) error {
	rel, ok := strings.CutPrefix(p.Workdir, SandboxHome+"/"+p.Tree.Name+"/")
	if !ok {
		return nil // the tree's top, or outside it
	}
	for _, e := range p.Tree.Entries {
		if e == rel || strings.HasPrefix(e, rel+"/") {
			return nil
		}
	}
	return tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeDir, Name: p.Tree.Name + "/" + rel + "/",
		Mode: 0o755, ModTime: now, Format: tar.FormatPAX,
	})
}

// writeStaged writes one session file: its staged copy, or body when a
// merge with the sandbox's copy replaced it.
func writeStaged(tw *tar.Writer, f StagedFile, body []byte, now time.Time) error {
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Target, SandboxHome+"/"),
		Mode: 0o600, Size: f.Size, ModTime: now, Format: tar.FormatPAX,
	}
	if body != nil {
		hdr.Size = int64(len(body))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	in, err := os.Open(f.Staged)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, in, f.Size); err != nil {
		return fmt.Errorf("read %s: %w", f.Staged, err)
	}
	return nil
}

// envFile is the credentials and settings as shell assignments.
func envFile(creds []Credential, settings []Setting) []byte {
	var b bytes.Buffer
	for _, c := range creds {
		fmt.Fprintf(&b, "%s=%s\n", c.Name, shellQuote(c.Value))
	}
	for _, s := range settings {
		fmt.Fprintf(&b, "%s=%s\n", s.Name, shellQuote(s.Value))
	}
	return b.Bytes()
}

// uploadHandoffDir writes files (built in memory only) to HandoffDir, a
// 0700 directory, each 0600; files already there under other names stay.
func uploadHandoffDir(ctx context.Context, sb Sandbox, files map[string][]byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	name := path.Base(HandoffDir)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o700, ModTime: now}); err != nil {
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		// PAX keeps the time to the nanosecond, where the writer would
		// round it to the second, possibly before the session files sent
		// just before it: the record's time is what a later handoff
		// compares the sandbox's files with (Changed).
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name + "/" + n, Mode: 0o600, Size: int64(len(files[n])), ModTime: now, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := sb.UploadArchive(ctx, path.Dir(HandoffDir), &buf); err != nil {
		return fmt.Errorf("upload the resume script: %w", err)
	}
	return nil
}

// runScript is sourced by the sandbox's shell. It checks the tool is
// there, then, in a subshell so nothing stays in the shell's environment,
// exports the credentials (set -a), changes to the working directory,
// runs the tool's login steps, removes the credentials file and starts
// the tool. The credentials stay on disk until then, so a start that
// fails before the tool runs can be retried as it is. Whatever way the
// tool ends, the script says how to start it again.
func (p *Plan) runScript(sandboxID string) (string, error) {
	if !ValidIdent(p.CLI) || !ValidIdent(sandboxID) {
		return "", fmt.Errorf("cannot write a run script for %q in sandbox %q", p.CLI, sandboxID)
	}
	env := HandoffDir + "/env"
	retry := "boxkite handoff --retry " + sandboxID
	steps := []string{"cd " + shellQuote(p.Workdir)}
	for _, s := range p.Login {
		line, err := commandLine(s.Argv)
		if err != nil {
			return "", err
		}
		if s.StdinEnv != "" {
			line = "printenv " + s.StdinEnv + " | " + line + " >/dev/null"
		}
		steps = append(steps, line)
	}
	steps = append(steps, "rm -f "+env)
	for _, argv := range p.resume {
		c, err := commandLine(argv)
		if err != nil {
			return "", err
		}
		steps = append(steps, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# boxkite handoff: %s session %s; sourced by the sandbox's shell.\n", p.Tool, p.Session.ID)
	fmt.Fprintf(&b, "# '%s' (on your machine) sends the credentials again and runs it again.\n", retry)
	fmt.Fprintf(&b, "if ! command -v %s >/dev/null 2>&1; then\n", p.CLI)
	fmt.Fprintf(&b, "\tprintf '%%s\\n' %s %s >&2\n",
		shellQuote("error: "+p.CLI+" is not installed in this sandbox"),
		shellQuote("hint: hand off into an image that has it (boxkite handoff "+p.Tool+" builds one), or install it here and run '"+retry+"'"))
	fmt.Fprintf(&b, "elif [ ! -f %s ]; then\n", env)
	fmt.Fprintf(&b, "\tprintf '%%s\\n' %s %s >&2\n",
		shellQuote("error: the credentials of this handoff are used up (they are removed when "+p.CLI+" starts)"),
		shellQuote("hint: run '"+retry+"' on your machine: it sends them again and starts "+p.CLI))
	// The subshell handles SIGINT (the tool gets the default back as it
	// starts): a Ctrl-C that ends the tool must not stop the hint after it.
	fmt.Fprintf(&b, "else\n\t(\n\t\ttrap : INT\n\t\tset -a\n\t\t. %s\n\t\tset +a\n\t\t%s\n", env, strings.Join(steps, " &&\n\t\t"))
	b.WriteString("\t\tstatus=$?\n")
	b.WriteString("\t\tif [ \"$status\" -ne 0 ]; then\n")
	fmt.Fprintf(&b, "\t\t\tprintf '\\n%%s\\n%%s\\n' \"error: %s ended with status $status\" %s >&2\n", p.CLI,
		shellQuote("hint: the sandbox and the session stay; see what "+p.CLI+" said above, then run '"+retry+"' on your machine to start it again"))
	b.WriteString("\t\telse\n")
	fmt.Fprintf(&b, "\t\t\tprintf '\\n%%s\\n' %s >&2\n", shellQuote("hint: "+p.CLI+" ended; '"+retry+"' on your machine starts it again"))
	b.WriteString("\t\tfi\n\t\texit \"$status\"\n\t)\nfi\n")
	return b.String(), nil
}

// commandLine joins argv of plain words into a command line.
func commandLine(argv []string) (string, error) {
	for _, w := range argv {
		if !wordRE.MatchString(w) {
			return "", fmt.Errorf("command word %q is not a plain shell word", w)
		}
	}
	return strings.Join(argv, " "), nil
}
