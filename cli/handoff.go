package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
	"github.com/spf13/cobra"
)

// handoffFlags are the options of `boxkite handoff`.
type handoffFlags struct {
	session   string
	sandbox   string
	dryRun    bool
	noAttach  bool
	keepLocal bool
	all       bool
	lifetime  time.Duration
	out       outputFlags
}

func newHandoffCmd(app *App) *cobra.Command {
	var f handoffFlags
	cmd := &cobra.Command{
		Use:   "handoff claude-code|codex|opencode|gemini [--session ID] [--dry-run] [--no-attach] [--keep-local]",
		Short: "Continue a local Claude Code, Codex, opencode or Gemini CLI session in a sandbox",
		Long: `Move the coding-agent session you are in, with this working tree, into a new
sandbox and resume it there.

The newest session recorded in this directory is picked (--session picks
another). The working tree goes as one streamed archive: the whole git work
tree this directory is in, .git included, without what .gitignore leaves out
(--all sends everything). The session's files go where the tool's resume
looks for them, with the recorded working directory rewritten to the
sandbox's; torn or corrupt lines are dropped with a warning. Credentials
(ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN; OPENAI_API_KEY, CODEX_API_KEY,
CODEX_ACCESS_TOKEN or ~/.codex/auth.json; opencode's auth.json entry;
GEMINI_API_KEY or GOOGLE_API_KEY) are
written to a 0600 file in the sandbox and sourced there, never typed.

Then this terminal is attached to the sandbox (needs an admin API key) and
the tool resumes. --dry-run prints the plan and sends nothing; --no-attach
(or --json) sends everything and prints what to run instead; --keep-local keeps the
rewritten session files staged on this machine and prints where.`,
		Example: `  boxkite handoff claude-code
  boxkite handoff codex --session 019c8a53-0000-7000-8000-00000000c0de --dry-run
  boxkite handoff opencode --no-attach`,
		GroupID:   groupSandboxes,
		Args:      usageArgs(handoffArgs),
		ValidArgs: handoff.AdapterNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.out.wantJSON(cmd)
			if err != nil {
				return err
			}
			return runHandoff(cmd.Context(), app, handoff.Adapters()[args[0]], f, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.session, "session", "", "the tool's session `ID` (default: the newest recorded in this directory)")
	fl.StringVarP(&f.sandbox, "sandbox", "s", "", "hand off into this existing sandbox (`ID`, prefix or label) instead of a new one")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan (files, sizes, target paths, resume command) and send nothing")
	fl.BoolVar(&f.noAttach, "no-attach", false, "send everything, then print how to resume instead of attaching")
	fl.BoolVar(&f.keepLocal, "keep-local", false, "keep the staged, rewritten session files on this machine")
	fl.BoolVar(&f.all, "all", false, "send files .gitignore leaves out too")
	fl.DurationVar(&f.lifetime, "lifetime", 2*time.Hour, "lifetime of the new sandbox")
	f.out.register(cmd)
	return cmd
}

func handoffArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("name one tool: %s", strings.Join(handoff.AdapterNames(), ", "))
	}
	if _, ok := handoff.Adapters()[args[0]]; !ok {
		return fmt.Errorf("unknown tool %q (want %s)", args[0], strings.Join(handoff.AdapterNames(), ", "))
	}
	return nil
}

func runHandoff(ctx context.Context, app *App, a handoff.Adapter, f handoffFlags, asJSON bool) error {
	env, err := handoff.OSEnv()
	if err != nil {
		return err
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("find the current directory: %w", err)
	}
	plan, err := handoff.Prepare(ctx, a, env, handoff.Options{Dir: dir, Session: f.session, All: f.all})
	if plan != nil && plan.StageDir != "" {
		if f.keepLocal {
			defer fmt.Fprintf(app.IO.ErrOut, "staged session files kept in %s\n", plan.StageDir)
		} else {
			defer os.RemoveAll(plan.StageDir)
		}
	}
	if err != nil {
		return fmt.Errorf("prepare the %s handoff: %w", a.Name(), err)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(app.IO.ErrOut, "warning: %s\n", w)
	}
	if f.dryRun {
		if asJSON {
			return writeJSON(app.IO.Out, planJSON(plan))
		}
		printPlan(app.IO.Out, plan)
		return nil
	}
	c, sb, err := handoffSandbox(ctx, app, a.Name(), f)
	if err != nil {
		return err
	}
	progress := newTransferProgress(app.IO, "uploading", plan.Size())
	res, err := handoff.Transfer(ctx, plan, archiveUploader{c, sb.ID}, progress.reader)
	progress.done()
	if err != nil {
		if f.sandbox == "" {
			// A sandbox made for this handoff holds half a tree: remove it.
			if derr := c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID); derr == nil {
				fmt.Fprintf(app.IO.ErrOut, "removed sandbox %s\n", sb.ID)
			}
		}
		return fmt.Errorf("hand off to sandbox %s: %w", sb.ID, err)
	}
	fmt.Fprintf(app.IO.ErrOut, "sent %d files (%s) to sandbox %s; the session resumes in %s\n",
		res.Files, humanBytes(res.Bytes), sb.ID, plan.Workdir)
	if f.noAttach || asJSON {
		if asJSON {
			return writeJSON(app.IO.Out, handoffResult{Sandbox: sb, Workdir: plan.Workdir, Run: res.Source})
		}
		fmt.Fprintln(app.IO.Out, sb.ID)
		fmt.Fprintf(app.IO.ErrOut, "to resume: boxkite attach -s %s, then run: %s\n", sb.ID, res.Source)
		return nil
	}
	// A leading space keeps the line out of an interactive shell's history
	// where HISTCONTROL allows; it names a path only either way.
	if err := attachSession(ctx, c, sb.ID, false, app.IO, " "+res.Source+"\r"); err != nil {
		// Everything is in the sandbox already: say how to carry on.
		return &hintError{err: err, hint: fmt.Sprintf("the session waits in sandbox %s; with an admin API key run 'boxkite attach -s %s', then: %s", sb.ID, sb.ID, res.Source)}
	}
	return nil
}

// handoffSandbox is the sandbox to hand off into: the one named with -s,
// else a new one labelled after the tool.
func handoffSandbox(ctx context.Context, app *App, tool string, f handoffFlags) (*client.Client, api.Sandbox, error) {
	if f.sandbox != "" {
		return target(ctx, app, f.sandbox, false)
	}
	c, err := app.Client()
	if err != nil {
		return nil, api.Sandbox{}, err
	}
	// A suffix of its own: labels are unique among active sandboxes, and a
	// second handoff of the same tool must not collide with the first.
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "handoff-" + tool + "-" + randomHex(3), LifetimeMinutes: int(f.lifetime.Minutes())})
	if err != nil {
		return nil, api.Sandbox{}, fmt.Errorf("create a sandbox: %w", err)
	}
	fmt.Fprintf(app.IO.ErrOut, "created sandbox %s\n", sb.ID)
	return c, *sb, nil
}

// archiveUploader binds the client's archive upload to one sandbox.
type archiveUploader struct {
	c  *client.Client
	id string
}

func (u archiveUploader) UploadArchive(ctx context.Context, dir string, r io.Reader) (*api.ArchiveResult, error) {
	return u.c.UploadArchive(ctx, u.id, dir, r)
}

// handoffResult is the --json answer of a handoff that does not attach.
type handoffResult struct {
	Sandbox api.Sandbox `json:"sandbox"`
	Workdir string      `json:"workdir"`
	Run     string      `json:"run"` // the line to run in the sandbox's shell
}

// plannedFile and plannedPlan are the --dry-run --json shapes; credentials
// appear by name and source only.
type plannedFile struct {
	Local  string `json:"local"`
	Target string `json:"target"`
	Size   int64  `json:"size"`
}

type plannedPlan struct {
	Tool        string        `json:"tool"`
	Session     string        `json:"session"`
	RecordedIn  string        `json:"recorded_in,omitempty"`
	Tree        string        `json:"tree"`
	TreeTarget  string        `json:"tree_target"`
	TreeFiles   int           `json:"tree_files"`
	TreeBytes   int64         `json:"tree_bytes"`
	Files       []plannedFile `json:"files"`
	Credentials []string      `json:"credentials"`
	Workdir     string        `json:"workdir"`
	Resume      string        `json:"resume"`
	Warnings    []string      `json:"warnings"`
}

func planJSON(p *handoff.Plan) plannedPlan {
	out := plannedPlan{
		Tool: p.Tool, Session: p.Session.ID, RecordedIn: p.Session.Cwd,
		Tree: p.Tree.Root, TreeTarget: filepath.ToSlash(filepath.Join(handoff.SandboxHome, p.Tree.Name)),
		TreeFiles: p.Tree.Files, TreeBytes: p.Tree.Bytes,
		Files: []plannedFile{}, Credentials: []string{}, Workdir: p.Workdir, Resume: p.Resume,
		Warnings: append([]string{}, p.Warnings...),
	}
	for _, f := range p.Files {
		out.Files = append(out.Files, plannedFile{Local: f.Local, Target: f.Target, Size: f.Size})
	}
	for _, c := range p.Credentials {
		out.Credentials = append(out.Credentials, c.String())
	}
	return out
}

func printPlan(w io.Writer, p *handoff.Plan) {
	j := planJSON(p)
	fmt.Fprintf(w, "tool:        %s\nsession:     %s\n", j.Tool, j.Session)
	if j.RecordedIn != "" {
		fmt.Fprintf(w, "recorded in: %s\n", j.RecordedIn)
	}
	fmt.Fprintf(w, "tree:        %s -> %s (%d files, %s)\n", j.Tree, j.TreeTarget, j.TreeFiles, humanBytes(j.TreeBytes))
	fmt.Fprintln(w, "files:")
	tw := newTable(w)
	for _, f := range j.Files {
		fmt.Fprintf(tw, "  %s\t%s\t<- %s\n", humanBytes(f.Size), f.Target, f.Local)
	}
	tw.Flush()
	creds := "none found"
	if len(j.Credentials) > 0 {
		creds = strings.Join(j.Credentials, ", ")
	}
	fmt.Fprintf(w, "credentials: %s (written to a 0600 file and sourced)\n", creds)
	fmt.Fprintf(w, "resume:      %s\n", j.Resume)
}
