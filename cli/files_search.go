package cli

import (
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

func newFilesGlobCmd(app *App) *cobra.Command {
	var (
		ref string
		req api.GlobRequest
		out outputFlags
	)
	cmd := &cobra.Command{
		Use:   "glob PATTERN",
		Short: "Find files of the sandbox by name pattern",
		Long: `Find files under --path (default: the workspace) whose path matches PATTERN; "**" spans directories.
A pattern that can match no file (empty, malformed such as '[', or ending in
"**") is a usage error; one that matches nothing is not: a note on stderr says
so (--json prints the empty list alone) and it exits 0. On a terminal a path's control characters are shown
escaped (\x1b); piped, or with --json, the bytes are as they are.`,
		Example: "  boxkite files glob '**/*.py'\n  boxkite files glob '*.log' --path /tmp",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			req.Pattern = args[0]
			if err := checkGlob(req.Pattern); err != nil {
				return err
			}
			c, sb, err := target(cmd.Context(), app, ref, false)
			if err != nil {
				return err
			}
			res, err := c.Glob(cmd.Context(), sb.ID, req)
			if err != nil {
				return fmt.Errorf("glob %s: %w", req.Pattern, err)
			}
			if asJSON {
				return out.write(app.IO, res)
			}
			if len(res.Matches) == 0 {
				fmt.Fprintf(app.IO.ErrOut, "no files under %s match %q\n", orWorkspace(req.Path), req.Pattern)
				return nil
			}
			writeGlobMatches(app.IO.Out, res.Matches, app.IO.OutTTY)
			if res.Truncated {
				fmt.Fprintf(app.IO.ErrOut, "(only the first %d matches are shown)\n", len(res.Matches))
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().StringVar(&req.Path, "path", "", "directory to search (default: the workspace)")
	out.register(cmd, api.GlobResult{})
	pageable(cmd)
	return cmd
}

// checkGlob refuses the patterns /glob answers with no matches whatever
// the files (an empty or malformed pattern, or one ending in "**", which
// would list directories): the API keeps the reference's empty answer, so
// only here can the user learn the pattern, not the files, was the cause.
// The rules are the sidecar's compileGlob.
func checkGlob(pattern string) error {
	const hint = "write a pattern such as '*.py' or '**/*.py' (\"**\" spans directories)"
	p := strings.TrimLeft(pattern, "/")
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return usageErrorf(hint, "empty glob pattern %q", pattern)
	}
	last := ""
	for s := range strings.SplitSeq(p, "/") {
		if s == "" || s == "." {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return usageErrorf(hint, "malformed glob pattern %q: %q is not a valid name pattern", pattern, s)
		}
		last = s
	}
	if last == "" || last == "**" {
		return usageErrorf("end it with a name pattern: '**/*' lists every file", "glob pattern %q matches only directories, and glob lists files", pattern)
	}
	return nil
}

func newFilesGrepCmd(app *App) *cobra.Command {
	var (
		ref string
		req api.GrepRequest
		out outputFlags
	)
	cmd := &cobra.Command{
		Use:   "grep PATTERN",
		Short: "Search file contents in the sandbox",
		Long: `Search the files under --path (default: the workspace) for lines matching the
regular expression PATTERN (RE2 syntax) and print them as path:line:text.
As grep(1): exits 0 when a line matched, 1 when none did, 2 or more on an
error. On a terminal control characters (but tabs) in paths and lines are
shown escaped (\x1b); piped, or with --json, the bytes are as they are.`,
		Example: "  boxkite files grep 'TODO|FIXME'\n  boxkite files grep 'def \\w+' --glob '*.py' --max-matches 50",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if req.MaxMatches < 1 || req.MaxMatches > api.MaxGrepMatches {
				return usageErrorf(helpHint(cmd), "--max-matches must be between 1 and %d", api.MaxGrepMatches)
			}
			req.Pattern = args[0]
			// The sidecar compiles it as Go's regexp does: say what is
			// wrong before asking, with what to do.
			if _, err := regexp.Compile(req.Pattern); err != nil {
				return usageErrorf(`PATTERN is a regular expression (RE2): put \ before [ ] ( ) { } . * + ? | ^ $ to match them as they are`,
					"invalid PATTERN %q: %s", req.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			}
			c, sb, err := target(cmd.Context(), app, ref, false)
			if err != nil {
				return err
			}
			res, err := c.Grep(cmd.Context(), sb.ID, req)
			if err != nil {
				if e, ok := errors.AsType[*api.Error](err); ok && e.Status < 500 && apiExitCode(e) == exitError {
					// grep(1) exits 2 on an error; 1 means no match.
					return &exitStatus{code: exitUsage, msg: fmt.Sprintf("grep %s: %s", req.Pattern, message(err)), hint: hintOf(err, cmd.Root().PersistentFlags())}
				}
				return fmt.Errorf("grep %s: %w", req.Pattern, err)
			}
			if asJSON {
				if err := out.write(app.IO, res); err != nil {
					return err
				}
			} else {
				writeGrepMatches(app.IO.Out, res.Matches, app.IO.OutTTY)
			}
			if res.Error != "" {
				// grep's "an error occurred": the search stopped (its time cap)
				return &exitStatus{code: exitUsage, msg: res.Error, hint: "the lines printed matched before it stopped"}
			}
			if res.Truncated {
				fmt.Fprintf(app.IO.ErrOut, "(stopped after %d matches; raise --max-matches or narrow --path/--glob)\n", len(res.Matches))
			}
			if len(res.Matches) == 0 {
				return &exitStatus{code: exitError} // grep's "no line matched"
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().StringVar(&req.Path, "path", "", "directory to search (default: the workspace)")
	cmd.Flags().StringVar(&req.Glob, "glob", "", "only files whose name or path matches this `pattern`")
	cmd.Flags().IntVar(&req.MaxMatches, "max-matches", api.DefaultGrepMatches, fmt.Sprintf("stop after `N` matches (at most %d)", api.MaxGrepMatches))
	out.register(cmd, api.GrepResult{})
	pageable(cmd)
	return cmd
}

// onTerminal is s as a terminal may show it: on a terminal (tty), its
// control characters but the tab escaped as in a table's cells (cell), so
// a file name or line a sandbox wrote cannot drive the reader's terminal
// (a tab cannot, and source lines are full of them); elsewhere the bytes
// as they are, as find(1) and grep(1) give them to scripts.
func onTerminal(s string, tty bool) string {
	if !tty {
		return s
	}
	parts := strings.Split(s, "\t")
	for i, p := range parts {
		parts[i] = cell(p)
	}
	return strings.Join(parts, "\t")
}

// writeGlobMatches prints one path a line.
func writeGlobMatches(w io.Writer, ms []api.GlobMatch, tty bool) {
	for _, m := range ms {
		fmt.Fprintln(w, onTerminal(m.Path, tty))
	}
}

// writeGrepMatches prints path:line:text a line, as grep -n does.
func writeGrepMatches(w io.Writer, ms []api.GrepMatch, tty bool) {
	for _, m := range ms {
		fmt.Fprintf(w, "%s:%d:%s\n", onTerminal(m.Path, tty), m.Line, onTerminal(m.Text, tty))
	}
}
