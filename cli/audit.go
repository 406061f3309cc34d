package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

// logSandbox resolves the sandbox a log command reads: a destroyed
// sandbox's log is still there, so any sandbox ref matches.
func logSandbox(ctx context.Context, app *App, ref string) (*client.Client, api.Sandbox, error) {
	c, err := app.Client()
	if err != nil {
		return nil, api.Sandbox{}, err
	}
	var sb api.Sandbox
	if ref != "" {
		sb, err = resolveSandbox(ctx, c, ref, false)
	} else {
		sb, err = pickSandbox(ctx, c, "", false, app.IO.ErrOut)
	}
	return c, sb, err
}

func newWatchCmd(app *App) *cobra.Command {
	var (
		ref, after string
		out        outputFlags
	)
	cmd := &cobra.Command{
		Use:   "watch [-s ID]",
		Short: "Follow the audit log of a sandbox live",
		Long: `Print the newest entries of a sandbox's audit log, then each new one the
moment it is written, until Ctrl-C. With --json, one entry per line (the
API's shape). --after resumes after an entry id.`,
		Example: "  boxkite watch\n  boxkite watch -s build --json | jq -r .operation",
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			asJSON, c, sb, err := jsonLogSandbox(cmd, app, &out, ref)
			if err != nil {
				return err
			}
			if app.IO.ErrTTY {
				fmt.Fprintf(app.IO.ErrOut, "watching sandbox %s (Ctrl-C to stop)\n", sb.ID)
			}
			err = c.WatchLog(ctx, sb.ID, after, func(e api.LogEntry) error {
				if asJSON {
					return out.writeItem(app.IO, e)
				}
				return writeLogLine(app.IO.Out, e)
			})
			if err != nil {
				return fmt.Errorf("watch sandbox %s: %w", sb.ID, err)
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().StringVar(&after, "after", "", "start after this entry `id` instead of with the newest entries")
	out.register(cmd, api.LogEntry{})
	return cmd
}

// writeLogLine prints one entry as a line of the log table, unaligned:
// a stream has no end to align to.
func writeLogLine(w io.Writer, e api.LogEntry) error {
	exit := "-"
	if e.ExitCode != nil {
		exit = fmt.Sprint(*e.ExitCode)
	}
	_, err := fmt.Fprintf(w, "%s  %s  %s  exit=%s  %s  %s\n",
		e.StartedAt.Local().Format("2006-01-02 15:04:05"), e.Source, e.Operation, exit,
		time.Duration(e.DurationMS)*time.Millisecond, truncate(compactJSON(e.Detail), maxDetailColumn))
	return err
}

func newAuditCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "audit",
		Short:   "Check a sandbox's audit log",
		GroupID: groupSandboxes,
	})
	cmd.AddCommand(newAuditVerifyCmd(app))
	return cmd
}

// auditVerdict is what `audit verify --json` prints.
type auditVerdict struct {
	SandboxID string `json:"sandbox_id"`
	Entries   int    `json:"entries"`
	HeadHash  string `json:"head_hash"`
	Verified  bool   `json:"verified"`
	Error     string `json:"error,omitempty"`
	Gap       bool   `json:"gap,omitempty"` // entries are missing (not only edited)
}

func newAuditVerifyCmd(app *App) *cobra.Command {
	var (
		ref string
		out outputFlags
	)
	cmd := &cobra.Command{
		Use:   "verify [-s ID]",
		Short: "Fetch a sandbox's whole audit log and verify its hash chain",
		Long: `Fetch every entry of a sandbox's audit log and check the hash chain: each
entry's row_hash must cover its contents and the row_hash of the entry
before it, from the genesis hash on; entries are numbered 1, 2, … without a
gap; and the log must reach the head the server recorded with its last
append. An edited, inserted, reordered or removed entry (the newest ones
included) fails the check; the command then names the first entry that does
not verify, says whether entries are missing, and exits 1. Keep the printed
head hash somewhere else too: someone who can rewrite the whole database
can rewrite the recorded head as well.`,
		Example: "  boxkite audit verify\n  boxkite audit verify -s build --json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			asJSON, c, sb, err := jsonLogSandbox(cmd, app, &out, ref)
			if err != nil {
				return err
			}
			entries, head, err := fetchLog(ctx, c, sb.ID)
			if err != nil {
				return err
			}
			v := auditVerdict{SandboxID: sb.ID, Entries: len(entries), HeadHash: api.GenesisHash, Verified: true}
			if len(entries) > 0 {
				v.HeadHash = entries[len(entries)-1].RowHash
			}
			verr := api.VerifyLog(entries, head.HeadSeq, head.HeadHash)
			if verr != nil {
				v.Verified, v.Error = false, verr.Error()
				v.Gap = errors.Is(verr, api.ErrLogGap)
			}
			if asJSON {
				if err := out.write(app.IO, v); err != nil {
					return err
				}
			} else if verr == nil {
				fmt.Fprintf(app.IO.Out, "sandbox %s: %d %s, hash chain verified; head %s\n", sb.ID, v.Entries, plural(v.Entries, "entry"), v.HeadHash)
			}
			if verr != nil {
				hint := "the log was changed after it was written; compare with a copy you kept (boxkite log --json)"
				if v.Gap {
					hint = "entries the server committed are missing from the log: it was cut behind the server's back; compare with a copy you kept (boxkite log --json)"
				}
				return &hintError{err: fmt.Errorf("audit log of sandbox %s does not verify: %w", sb.ID, verr), hint: hint}
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	out.register(cmd, auditVerdict{})
	return cmd
}

// fetchLog reads all of a sandbox's log entries, oldest first, and the
// first page, whose head the log must reach (api.VerifyLog).
func fetchLog(ctx context.Context, c *client.Client, id string) ([]api.LogEntry, api.LogPage, error) {
	var entries []api.LogEntry
	var first *api.LogPage
	for {
		page, err := c.Log(ctx, id, api.MaxLogLimit, len(entries))
		if err != nil {
			return nil, api.LogPage{}, fmt.Errorf("read the log of sandbox %s: %w", id, err)
		}
		if first == nil {
			first = page
		}
		entries = append(entries, page.Entries...)
		if len(page.Entries) == 0 || len(entries) >= page.Total {
			return entries, *first, nil
		}
	}
}

func newAllowlistCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:   "allowlist",
		Short: "Show, set or clear the account's command allowlist",
		Long: `The command allowlist restricts what exec, background processes and the
Python interpreter may run in the account's sandboxes (the interpreter
counts as python3 -c CODE): each program must be listed, optionally with
regular expressions its arguments must (args_allow) or must not (args_deny)
match. A rule names a program ("ls", found through the sandbox's fixed
PATH) or an absolute path ("/usr/bin/ls", allowing that path only); a
program written with a slash (./bin/ls) needs a rule naming exactly its
path. Command substitution, heredocs, process substitution, wrappers that
hide what they run, and assignments to PATH, LD_*, BASH_ENV, IFS and the
like are refused. No list means every command is allowed. It is a
guardrail for agents, not a security boundary: see docs/audit.md.`,
		GroupID: groupSettings,
	})
	cmd.AddCommand(newAllowlistGetCmd(app), newAllowlistSetCmd(app), newAllowlistClearCmd(app))
	return cmd
}

func newAllowlistGetCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:     "get",
		Short:   "Print the command allowlist",
		Example: "  boxkite allowlist get\n  boxkite allowlist get --json > rules.json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			rules, err := c.AllowedCommands(cmd.Context())
			if err != nil {
				return fmt.Errorf("read the allowlist: %w", err)
			}
			if rules == nil {
				rules = []api.CommandRule{}
			}
			if asJSON {
				return out.write(app.IO, rules)
			}
			if len(rules) == 0 {
				fmt.Fprintln(app.IO.ErrOut, "no allowlist: every command is allowed")
				return nil
			}
			tw := newTable(app.IO.Out)
			tw.Header(app.IO.Color, "COMMAND\tARGS ALLOW\tARGS DENY")
			for _, r := range rules {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(r.Command), cell(orDash(strings.Join(r.ArgsAllow, "  "))), cell(orDash(strings.Join(r.ArgsDeny, "  "))))
			}
			return tw.Flush()
		},
	}
	out.register(cmd, api.CommandRule{})
	pageable(cmd)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newAllowlistSetCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set FILE",
		Short: "Replace the command allowlist with the rules in a JSON file",
		Long: `Replace the command allowlist with the rules in FILE ("-" reads standard
input): a JSON array (or {"rules": [...]}) of program names or absolute
paths, and objects {"command": "curl", "args_allow": ["^https://api\\.example\\.com/"],
"args_deny": ["--upload-file"]}. Patterns are RE2 regular expressions,
matched case-insensitively anywhere in the arguments as written. At most 50 rules and
200 characters a pattern. Needs an admin key.`,
		Example: `  echo '["ls", "cat", "python3", {"command": "git", "args_allow": ["^(status|diff|log)"]}]' > rules.json
  boxkite allowlist set rules.json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			rules, err := readRules(app.IO.In, args[0])
			if err != nil {
				return usageErrorf(helpHint(cmd), "%v", err)
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			stored, err := c.SetAllowedCommands(cmd.Context(), rules)
			if err != nil {
				return fmt.Errorf("set the allowlist: %w", err)
			}
			fmt.Fprintf(app.IO.ErrOut, "allowlist set: %d %s\n", len(stored), plural(len(stored), "rule"))
			return nil
		},
	}
	return cmd
}

// readRules reads an allowlist file: an array of rules or {"rules": [...]}.
func readRules(stdin io.Reader, name string) ([]api.CommandRule, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	var rules []api.CommandRule
	if err := json.Unmarshal(data, &rules); err == nil {
		return rules, nil
	}
	var wrapped api.AllowedCommands
	if err := json.Unmarshal(data, &wrapped); err != nil || wrapped.Rules == nil {
		if err == nil {
			err = errors.New(`no "rules"`)
		}
		return nil, fmt.Errorf("%s is not a JSON array of rules: %w", name, err)
	}
	return wrapped.Rules, nil
}

func newAllowlistClearCmd(app *App) *cobra.Command {
	var conf confirmation
	cmd := &cobra.Command{
		Use:     "clear",
		Example: "  boxkite allowlist clear\n  boxkite allowlist clear --yes",
		Short:   "Remove the command allowlist: every command is allowed again",
		Long:    "Remove the command allowlist: every command is allowed again. On a terminal it\nasks first; elsewhere it needs --yes.",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := conf.client(app, args)
			if err != nil {
				return err
			}
			if err := conf.ask(app, "Clear the command allowlist? Every command will be allowed."); err != nil {
				return err
			}
			if err := c.ClearAllowedCommands(cmd.Context()); err != nil {
				return fmt.Errorf("clear the allowlist: %w", err)
			}
			fmt.Fprintln(app.IO.ErrOut, "allowlist cleared: every command is allowed")
			return nil
		},
	}
	conf.register(cmd)
	return cmd
}
