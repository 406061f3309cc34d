package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
	"github.com/spf13/cobra"
)

// handoffFlags are the options of `boxkite handoff`.
type handoffFlags struct {
	session      string
	sandbox      string
	image        string
	agentVersion string
	allowHosts   []string
	noEgress     bool
	retry        string
	dryRun       bool
	noAttach     bool
	keepLocal    bool
	all          bool
	force        bool
	lifetime     time.Duration
	out          outputFlags
}

func newHandoffCmd(app *App) *cobra.Command {
	var f handoffFlags
	cmd := &cobra.Command{
		Use:   "handoff claude-code|codex|opencode|gemini [--session ID] [--dry-run] [--no-attach] | handoff --retry SANDBOX",
		Short: "Continue a local Claude Code, Codex, opencode or Gemini CLI session in a sandbox",
		Long: `Move the coding-agent session you are in, with this working tree, into a new
sandbox and resume it there.

The sandbox boots from an image with the agent's CLI, built from its npm
package the first time (a minute or so; later handoffs reuse it); --image
names another. Before anything moves, the agent's --version must run there.
The sandbox may reach the agent's model API (api.anthropic.com,
api.openai.com, generativelanguage.googleapis.com, or the host of the base
URL set here: ANTHROPIC_BASE_URL, Codex's openai_base_url or
OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL) and nothing else; --allow-host
replaces that list, --no-egress grants none.

The newest session recorded in this directory (or, from a subdirectory,
in the project) is picked; --session picks another. The working tree goes
as one streamed archive: the whole git work tree this directory is in,
.git included, without what .gitignore leaves out (--all sends
everything). The session's files go where the tool's resume looks for
them, with the recorded working directories rewritten to the sandbox's.
Credentials (ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN; OPENAI_API_KEY,
CODEX_API_KEY, CODEX_ACCESS_TOKEN or ~/.codex/auth.json; opencode's
auth.json entry; GEMINI_API_KEY or GOOGLE_API_KEY) are written to a 0600
file in the sandbox and sourced there, never typed; it is removed as the
agent starts.

Then this terminal is attached to the sandbox (needs an admin API key and a
terminal) and the agent resumes; when the sandbox's shell exits, handoff
exits with its status, as 'boxkite attach' does. If it cannot start, the sandbox stays:
'boxkite handoff --retry SANDBOX' sends the credentials again and starts it
again. --dry-run prints the plan and sends nothing; --no-attach (or --json)
sends everything and prints what to run instead; --keep-local keeps the
rewritten session files staged on this machine and prints where.

A handoff into a sandbox a handoff was made into before (-s) first looks
for files there that it would overwrite and that changed since that
handoff (the agent's work): it refuses, naming a few, unless --force.`,
		Example: `  boxkite handoff claude-code
  boxkite handoff codex --session 019c8a53-0000-7000-8000-00000000c0de --dry-run
  boxkite handoff opencode --no-attach
  boxkite handoff gemini --no-egress
  boxkite handoff claude-code -s sb_0123abcd --force
  boxkite handoff --retry sb_0123abcd`,
		GroupID:   groupSandboxes,
		Args:      usageArgs(handoffArgs(&f)),
		ValidArgs: handoff.AdapterNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := f.out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if f.retry != "" {
				return runHandoffRetry(cmd.Context(), app, f, asJSON)
			}
			if f.sandbox == "" {
				// Whole minutes, checked before anything is read or sent.
				if f.lifetime, err = lifetimeMinutesDuration(cmd, f.lifetime); err != nil {
					return err
				}
			}
			return runHandoff(cmd.Context(), app, handoff.Adapters()[args[0]], f, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.session, "session", "", "the tool's session `ID` (default: the newest recorded in this directory)")
	fl.StringVarP(&f.sandbox, "sandbox", "s", "", "hand off into this existing sandbox (`ID`, prefix or label) instead of a new one")
	fl.StringVar(&f.image, "image", "", "boot the new sandbox from this image `ID` instead of the agent's own")
	fl.StringVar(&f.agentVersion, "agent-version", "", "build the agent's image from this `VERSION` of its npm package (default: the one boxkite pins)")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "grant egress to this `HOST[:PORT]` instead of the agent's model API (repeatable)")
	fl.BoolVar(&f.noEgress, "no-egress", false, "grant the sandbox no egress at all (the agent cannot reach its API)")
	fl.StringVar(&f.retry, "retry", "", "start the agent of the handoff made into `SANDBOX` again, sending the credentials again")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan (files, sizes, target paths, image, egress, resume command) and send nothing")
	fl.BoolVar(&f.noAttach, "no-attach", false, "send everything, then print how to resume instead of attaching")
	fl.BoolVar(&f.keepLocal, "keep-local", false, "keep the staged, rewritten session files on this machine")
	fl.BoolVar(&f.all, "all", false, "send files .gitignore leaves out too")
	fl.BoolVar(&f.force, "force", false, "with -s, overwrite files changed in the sandbox since the last handoff into it")
	fl.Var(newDurationValue(&f.lifetime, 2*time.Hour, time.Minute), "lifetime", "lifetime of the new sandbox, e.g. 30m or 2h; a bare number is minutes")
	f.out.register(cmd, handoffResult{})
	return cmd
}

func handoffArgs(f *handoffFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if f.retry != "" {
			if len(args) > 1 || (len(args) == 1 && handoff.Agents()[args[0]].CLI == "") {
				return fmt.Errorf("--retry takes a sandbox and at most the tool's name")
			}
			return nil
		}
		if len(args) != 1 {
			return fmt.Errorf("name one tool: %s", strings.Join(handoff.AdapterNames(), ", "))
		}
		if _, ok := handoff.Adapters()[args[0]]; !ok {
			return fmt.Errorf("unknown tool %q (want %s)", args[0], strings.Join(handoff.AdapterNames(), ", "))
		}
		switch {
		case f.noEgress && len(f.allowHosts) > 0:
			return errors.New("--no-egress and --allow-host contradict each other")
		case f.agentVersion != "" && !handoff.ValidVersion(f.agentVersion):
			return fmt.Errorf("--agent-version %q is not a version", f.agentVersion)
		case f.sandbox != "" && (f.image != "" || f.agentVersion != ""):
			return errors.New("-s hands off into an existing sandbox, whose image is set: leave out --image and --agent-version")
		case f.sandbox != "" && cmd.Flags().Changed("lifetime"):
			return errors.New("-s hands off into an existing sandbox, whose lifetime is set: leave out --lifetime ('boxkite session extend' changes it)")
		case f.sandbox != "" && f.noEgress:
			return errors.New("-s hands off into an existing sandbox, whose egress is set: leave out --no-egress")
		case f.force && f.sandbox == "":
			return errors.New("--force goes with -s: a new sandbox has nothing to overwrite")
		}
		for _, h := range f.allowHosts {
			if !plausibleGrant(h) {
				return fmt.Errorf("--allow-host %q is not HOST or HOST:PORT", h)
			}
		}

		return nil
	}
}

// plausibleGrant is a first check of an --allow-host value, so that a
// --dry-run does not plan what the server's create would refuse: a name
// without spaces, slashes or an @, and a port from 1 to 65535 when one
// is given. The server's check (which also refuses IP addresses) is the
// authority.
func plausibleGrant(h string) bool {
	host := h
	if hp, port, err := net.SplitHostPort(h); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return false
		}
		host = hp
	}
	return host != "" && !strings.ContainsAny(host, " \t/@[]:")
}

// errNoTerminal refuses to attach a stdin that is not a terminal: the
// resume line would be typed into the sandbox and the session left
// running with nobody at it.
var errNoTerminal = &hintError{
	err:  errors.New("boxkite handoff attaches this terminal to the sandbox, but standard input is not a terminal"),
	hint: "run it in a terminal, or pass --no-attach (or --json) to send everything and print the line to run",
}

func runHandoff(ctx context.Context, app *App, a handoff.Adapter, f handoffFlags, asJSON bool) error {
	if f.session != "" && !handoff.ValidIdent(f.session) {
		return usageErrorf("session ids are letters, digits, '.', '_' and '-'; copy it from the tool's session list",
			"--session %q is not a session id", f.session)
	}
	attach := !f.dryRun && !f.noAttach && !asJSON
	if attach && !app.IO.InTTY {
		return errNoTerminal
	}
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
		return stopped(ctx, prepareError(a, err), "while reading the session; nothing was sent")
	}
	agent := handoff.Agents()[a.Name()]
	egress := handoffEgress(plan.Egress, f)
	for _, w := range plan.Warnings {
		fmt.Fprintf(app.IO.ErrOut, "warning: %s\n", w)
	}
	if f.dryRun {
		pj := planJSON(plan, agent, f, egress)
		if asJSON {
			return f.out.write(app.IO, pj)
		}
		printPlan(app.IO.Out, pj)
		return nil
	}
	c, err := app.Client()
	if err != nil {
		return err
	}
	sb, created, err := handoffSandbox(ctx, app, c, agent, f, egress)
	if err != nil {
		return err
	}
	// A sandbox made for this handoff and holding nothing yet is removed
	// when the agent cannot run there or the upload fails half way.
	discard := func(err error) error {
		removed := false
		if created {
			removed = c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID) == nil
		}
		if ctx.Err() != nil {
			return interrupted(sb.ID, created, removed)
		}
		if removed {
			fmt.Fprintf(app.IO.ErrOut, "removed sandbox %s\n", sb.ID)
		}
		return err
	}
	version, err := checkAgent(ctx, c, sb.ID, agent)
	if err != nil {
		return discard(err)
	}
	fmt.Fprintf(app.IO.ErrOut, "%s in the sandbox: %s\n", agent.CLI, version)
	if !created && !f.force {
		changed, err := handoff.Changed(ctx, plan, handoffTarget{c, sb.ID}, execIn(c, sb.ID))
		if err == nil && len(changed) > 0 {
			err = changedError(sb.ID, changed)
		}
		if err != nil {
			return stopped(ctx, err, "before anything was sent")
		}
	}
	progress := newTransferProgress(app.IO, "uploading", plan.Size())
	res, err := handoff.Transfer(ctx, plan, handoffTarget{c, sb.ID}, sb.ID, progress.reader)
	progress.done()
	if err != nil {
		return discard(fmt.Errorf("hand off to sandbox %s: %w", sb.ID, err))
	}
	fmt.Fprintf(app.IO.ErrOut, "sent %d files (%s) to sandbox %s; the session resumes in %s\n",
		res.Files, humanBytes(res.Bytes), sb.ID, plan.Workdir)
	return startAgent(ctx, app, c, sb, res.Source, attach, jsonOut(asJSON, &f.out), plan.Workdir)
}

// interrupted is the error of a handoff stopped by Ctrl-C once its
// sandbox was chosen (exit 130): it says what became of the sandbox.
func interrupted(id string, created, removed bool) error {
	msg := "interrupted; sandbox " + id + " may hold part of the upload"
	switch {
	case removed:
		msg = "interrupted; removed sandbox " + id + ", made for this handoff"
	case created:
		msg = "interrupted; could not remove sandbox " + id + ", made for this handoff: run 'boxkite session rm " + id + "'"
	}
	return &exitStatus{code: exitInterrupted, msg: msg}
}

// stopped is err, or when Ctrl-C caused it (ctx cancelled) the interrupt
// (exit 130) with "interrupted " and what, which says what became of the
// handoff: an interrupt exits without a word otherwise.
func stopped(ctx context.Context, err error, what string) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return &exitStatus{code: exitInterrupted, msg: "interrupted " + what}
}

// prepareError is a failed Prepare; no session to hand off (none recorded
// here, or none with --session's id) is not found: exit 3.
func prepareError(a handoff.Adapter, err error) error {
	err = fmt.Errorf("prepare the %s handoff: %w", a.Name(), err)
	if !errors.Is(err, handoff.ErrNoSession) {
		return err
	}
	hint := ""
	if e, ok := errors.AsType[*handoff.Error](err); ok {
		hint = e.Hint
	}
	return &notFoundError{err: err, hint: hint}
}

// startAgent attaches this terminal to the sandbox and types the line
// that starts the agent, or (not attaching) prints it.
func startAgent(ctx context.Context, app *App, c *client.Client, sb api.Sandbox, source string, attach bool, out *outputFlags, workdir string) error {
	if !attach {
		if out != nil {
			return out.write(app.IO, handoffResult{Sandbox: sb, Workdir: workdir, Run: source})
		}
		fmt.Fprintln(app.IO.Out, sb.ID)
		fmt.Fprintf(app.IO.ErrOut, "to resume: boxkite attach -s %s, then run: %s\n", sb.ID, source)
		return nil
	}
	// A leading space keeps the line out of an interactive shell's history
	// where HISTCONTROL allows; it names a path only either way.
	exited, code, err := attachSession(ctx, c, sb.ID, false, app.IO, " "+source+"\r")
	if _, ok := errors.AsType[*client.SandboxEndedError](err); ok {
		return err // nothing waits there any more
	}
	if err != nil {
		// Everything is in the sandbox already: say how to carry on.
		return &hintError{err: err, hint: fmt.Sprintf("the session waits in sandbox %s; run 'boxkite handoff --retry %s' (needs an admin API key)", sb.ID, sb.ID)}
	}
	if exited && code != 0 {
		// As boxkite attach does: the shell's exit status is handoff's.
		return &exitStatus{code: code}
	}
	return nil
}

// lifetimeMinutesDuration is d as the whole minutes a sandbox lives,
// refused under a minute (lifetimeMinutes).
func lifetimeMinutesDuration(cmd *cobra.Command, d time.Duration) (time.Duration, error) {
	m, err := lifetimeMinutes(cmd, d)
	return time.Duration(m) * time.Minute, err
}

// handoffEgress is what the sandbox is granted: the agent's model API
// (plan), or --allow-host's hosts instead, or nothing with --no-egress.
func handoffEgress(planned []string, f handoffFlags) []string {
	switch {
	case f.noEgress:
		return nil
	case len(f.allowHosts) > 0:
		return f.allowHosts
	}
	return planned
}

// handoffSandbox is the sandbox to hand off into: the one named with -s,
// else a new one from the agent's image, granted egress.
func handoffSandbox(ctx context.Context, app *App, c *client.Client, agent handoff.Agent, f handoffFlags, egress []string) (api.Sandbox, bool, error) {
	if f.sandbox != "" {
		_, sb, err := target(ctx, app, f.sandbox, false)
		err = stopped(ctx, err, "before anything was sent")
		if err == nil && len(egress) > 0 {
			fmt.Fprintf(app.IO.ErrOut, "warning: sandbox %s keeps the egress it was created with; %s must be among it for %s to reach its API\n",
				sb.ID, strings.Join(egress, ", "), agent.CLI)
		}
		return sb, false, err
	}
	image, err := agentImage(ctx, app.IO, c, agent, f.agentVersion, f.image)
	if err != nil {
		return api.Sandbox{}, false, stopped(ctx, err, "while building the "+agent.Tool+
			" image; nothing was sent (a build the server started goes on, and the next handoff reuses it)")
	}
	// A suffix of its own: labels are unique among active sandboxes, and a
	// second handoff of the same tool must not collide with the first.
	label := "handoff-" + agent.Tool + "-" + randomHex(3)
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{
		Label: label, LifetimeMinutes: int(f.lifetime / time.Minute), ImageID: image, EgressHosts: egress,
	})
	if err != nil {
		return api.Sandbox{}, false, stopped(ctx, fmt.Errorf("create a sandbox: %w", err), "while creating sandbox "+label+
			"; nothing was sent (if the server made it, remove it with 'boxkite session rm "+label+" --yes')")
	}
	grants := "no egress"
	if len(egress) > 0 {
		grants = "egress to " + strings.Join(egress, ", ")
	}
	fmt.Fprintf(app.IO.ErrOut, "created sandbox %s (%s)\n", sb.ID, grants)
	return *sb, true, nil
}

// runHandoffRetry starts the agent of the handoff recorded in a sandbox
// again: its CLI checked, the credentials read here and sent again.
func runHandoffRetry(ctx context.Context, app *App, f handoffFlags, asJSON bool) error {
	// The sandbox first: a wrong or destroyed one is the mistake to
	// report, whatever the terminal; nothing is sent before both pass.
	c, sb, err := target(ctx, app, f.retry, false)
	if err != nil {
		return stopped(ctx, err, "before anything was sent")
	}
	attach := !f.noAttach && !asJSON
	if attach && !app.IO.InTTY {
		return errNoTerminal
	}
	env, err := handoff.OSEnv()
	if err != nil {
		return err
	}
	sbx := handoffTarget{c, sb.ID}
	notStarted := "before the agent started in sandbox " + sb.ID + ": 'boxkite handoff --retry " + sb.ID + "' tries again"
	rec, err := handoff.ReadRecord(ctx, sbx)
	if err != nil {
		return stopped(ctx, fmt.Errorf("retry the handoff in sandbox %s: %w", sb.ID, err), notStarted)
	}
	agent := handoff.Agents()[rec.Tool]
	version, err := checkAgent(ctx, c, sb.ID, agent)
	if err != nil {
		return stopped(ctx, err, notStarted)
	}
	fmt.Fprintf(app.IO.ErrOut, "%s in the sandbox: %s\n", agent.CLI, version)
	l := handoff.LaunchFor(rec.Tool, env, rec.Provider)
	for _, w := range l.Warnings {
		fmt.Fprintf(app.IO.ErrOut, "warning: %s\n", w)
	}
	if err := handoff.Rearm(ctx, sbx, l.Credentials, l.Settings); err != nil {
		return stopped(ctx, fmt.Errorf("retry the handoff in sandbox %s: %w", sb.ID, err), notStarted)
	}
	return startAgent(ctx, app, c, sb, handoff.Source, attach, jsonOut(asJSON, &f.out), rec.Workdir)
}

// handoffTarget binds the client's archive upload and file download to
// one sandbox.
type handoffTarget struct {
	c  *client.Client
	id string
}

func (u handoffTarget) UploadArchive(ctx context.Context, dir string, r io.Reader) (*api.ArchiveResult, error) {
	return u.c.UploadArchive(ctx, u.id, dir, r)
}

// ReadFile reads a small file of the sandbox (a tool's state file, the
// handoff record); nil when there is none.
func (u handoffTarget) ReadFile(ctx context.Context, p string) ([]byte, error) {
	d, err := u.c.DownloadFile(ctx, u.id, p)
	if e, ok := errors.AsType[*api.Error](err); ok && e.Status == 404 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(io.LimitReader(d, 16<<20))
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
	Settings    []string      `json:"settings"` // names only: a base URL may hold a token
	Image       string        `json:"image"`    // an image id, or the agent image's npm packages
	Egress      []string      `json:"egress"`
	Workdir     string        `json:"workdir"`
	Resume      string        `json:"resume"`
	Warnings    []string      `json:"warnings"`
}

func planJSON(p *handoff.Plan, agent handoff.Agent, f handoffFlags, egress []string) plannedPlan {
	out := plannedPlan{
		Tool: p.Tool, Session: p.Session.ID, RecordedIn: p.Session.Cwd,
		Tree: p.Tree.Root, TreeTarget: filepath.ToSlash(filepath.Join(handoff.SandboxHome, p.Tree.Name)),
		TreeFiles: p.Tree.Files, TreeBytes: p.Tree.Bytes,
		Files: []plannedFile{}, Credentials: []string{}, Settings: []string{}, Egress: append([]string{}, egress...),
		Workdir: p.Workdir, Resume: p.Resume, Warnings: append([]string{}, p.Warnings...),
	}
	switch {
	case f.sandbox != "":
		out.Image = "that of sandbox " + f.sandbox
	case f.image != "":
		out.Image = f.image
	default:
		out.Image = "npm " + strings.Join(agent.ImageSpec(f.agentVersion).NPMPackages, " ")
	}
	for _, f := range p.Files {
		out.Files = append(out.Files, plannedFile{Local: f.Local, Target: f.Target, Size: f.Size})
	}
	for _, c := range p.Credentials {
		out.Credentials = append(out.Credentials, c.String())
	}
	for _, s := range p.Settings {
		out.Settings = append(out.Settings, s.Name)
	}
	return out
}

func printPlan(w io.Writer, j plannedPlan) {
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
	if len(j.Settings) > 0 {
		fmt.Fprintf(w, "settings:    %s\n", strings.Join(j.Settings, ", "))
	}
	fmt.Fprintf(w, "image:       %s\n", j.Image)
	egress := "none"
	if len(j.Egress) > 0 {
		egress = strings.Join(j.Egress, ", ")
	}
	fmt.Fprintf(w, "egress:      %s\n", egress)
	fmt.Fprintf(w, "resume:      %s\n", j.Resume)
}
