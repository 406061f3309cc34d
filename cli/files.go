package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

func newFilesCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "files",
		Aliases: []string{"file", "fs"},
		Short:   "List, read, write, search, copy and remove files in a sandbox",
		Long: `Work with the files of a sandbox. Paths are in the sandbox: relative paths
and "/" mean the workspace (/workspace); /tmp, /mnt/user-data/outputs (alias
/outputs), /mnt/user-data/uploads (/uploads, read-only) and /mnt/skills
(/skills, read-only) are the other roots.`,
		GroupID: groupSandboxes,
	})
	cmd.AddCommand(
		newFilesLsCmd(app),
		newFilesViewCmd(app),
		newFilesCreateCmd(app),
		newFilesEditCmd(app),
		newFilesGlobCmd(app),
		newFilesGrepCmd(app),
		newFilesRmCmd(app),
		newFilesCpCmd(app),
	)
	return cmd
}

func newFilesLsCmd(app *App) *cobra.Command {
	var (
		ref         string
		out         outputFlags
		fromStorage bool
	)
	cmd := &cobra.Command{
		Use: "ls [PATH]",
		Example: `  boxkite files ls -s build
  boxkite files ls -s build src --json
  boxkite files ls -s build --from-storage`,
		Short: "List a directory of the sandbox (default: the workspace)",
		Long: `List a directory of the sandbox (default: the workspace). A PATH that
is a file prints that file's own entry, as ls(1) does; one that is not
there is not found (exit 3); an empty directory prints nothing and says so
on stderr. --json prints the API's answer: an empty list for an empty
directory, the not_found error for a missing one, and for a file the list
of its one entry (the API refuses ls of a file with not_a_directory; the
CLI finds the entry in the listing of the file's directory).`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			req := api.LsRequest{}
			if len(args) == 1 {
				req.Path = args[0]
			}
			c, sb, err := target(cmd.Context(), app, ref, false)
			if fromStorage && ref != "" {
				// A destroyed sandbox's stored files are listed too.
				if c, err = app.Client(); err == nil {
					sb, err = resolveSandbox(cmd.Context(), c, ref, false)
				}
			}
			if err != nil {
				return err
			}
			var res *api.LsResult
			if fromStorage {
				res, err = storedLs(cmd.Context(), c, sb.ID, req.Path)
			} else {
				res, err = c.Ls(cmd.Context(), sb.ID, req)
				if notADirectory(err) {
					res, err = lsFile(cmd.Context(), c, sb.ID, req.Path)
				}
			}
			if storedRefusal(err) {
				return err // says the path itself
			}
			if !fromStorage && pathNotFound(err) {
				return &notFoundError{err: fmt.Errorf("%s not found in sandbox %s", sandboxPath(req.Path), sb.ID), hint: pathHint}
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", orWorkspace(req.Path), err)
			}
			if asJSON {
				return out.write(app.IO, res)
			}
			if len(res.Entries) == 0 && fromStorage {
				fmt.Fprintf(app.IO.ErrOut, "no files of sandbox %s are in object storage yet\n", sb.ID)
				return nil
			}
			if len(res.Entries) == 0 {
				fmt.Fprintf(app.IO.ErrOut, "%s is empty; create a file with 'boxkite files create PATH'\n", orWorkspace(req.Path))
				return nil
			}
			return writeLsTable(app.IO.Out, res.Entries, app.IO.Color)
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().BoolVar(&fromStorage, "from-storage", false, "list the files synced to object storage (every file under PATH), also after the sandbox is destroyed (docs/storage.md)")
	out.register(cmd, api.LsResult{})
	pageable(cmd)
	return cmd
}

// lsFile lists the file p as ls(1) does: its own entry, which it finds
// in the listing of p's directory (the API lists directories only). A
// file gone in between is not found, as a missing path is.
func lsFile(ctx context.Context, c *client.Client, id, p string) (*api.LsResult, error) {
	v := sandboxPath(p)
	res, err := c.Ls(ctx, id, api.LsRequest{Path: path.Dir(v)})
	if err != nil && !pathNotFound(err) {
		return nil, err
	}
	if err == nil {
		// By name: entries are named by the directory's real path, which
		// differs from v's through a symlink or an alias (/outputs).
		for _, e := range res.Entries {
			if path.Base(e.Path) == path.Base(v) && !e.IsDir {
				return &api.LsResult{Entries: []api.LsEntry{e}}, nil
			}
		}
	}
	return nil, &notFoundError{err: fmt.Errorf("%s not found in sandbox %s", v, id), hint: pathHint}
}

// notADirectory reports whether err is the sidecar's refusal to list a
// file.
func notADirectory(err error) bool {
	e, ok := errors.AsType[*api.Error](err)
	return ok && e.Code == api.CodeNotADirectory
}

// storedLs lists the sandbox's files in object storage under dir (a
// workspace path; "" for all) as ls entries. A dir outside the workspace
// is a usage error (only /workspace is synced), and one that holds no
// stored file is not found, as files cp --from-storage says.
func storedLs(ctx context.Context, c *client.Client, id, dir string) (*api.LsResult, error) {
	prefix, ok := storedRel(dir)
	if !ok {
		return nil, usageErrorf("only /workspace is synced to object storage (docs/storage.md)", "%s is not in /workspace", sandboxPath(dir))
	}
	files, err := c.StoredFiles(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &api.LsResult{Entries: []api.LsEntry{}}
	for _, f := range files.Files {
		if prefix != "" && f.Path != prefix && !strings.HasPrefix(f.Path, prefix+"/") {
			continue
		}
		out.Entries = append(out.Entries, api.LsEntry{Path: rootWorkspace + "/" + f.Path, Size: f.Size, ModifiedAt: f.ModifiedAt})
	}
	if prefix != "" && len(out.Entries) == 0 {
		return nil, &notFoundError{err: fmt.Errorf("%s is not in the object storage of sandbox %s", sandboxPath(dir), id), hint: storedHint}
	}
	return out, nil
}

// storedRefusal reports whether err is storedLs's own refusal of its path.
func storedRefusal(err error) bool {
	_, nf := errors.AsType[*notFoundError](err)
	_, usage := errors.AsType[*usageError](err)
	return nf || usage
}

func orWorkspace(p string) string {
	if p == "" {
		return rootWorkspace
	}
	return p
}

// writeLsTable prints entries as SIZE, MODIFIED and PATH columns.
func writeLsTable(w io.Writer, entries []api.LsEntry, color bool) error {
	if len(entries) == 0 {
		return nil
	}
	tw := newTable(w)
	tw.Header(color, "SIZE\tMODIFIED\tPATH")
	for _, e := range entries {
		size := "-"
		if !e.IsDir {
			size = humanBytes(e.Size)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", size, e.ModifiedAt.Local().Format("2006-01-02 15:04"), cell(e.Path))
	}
	return tw.Flush()
}

// humanBytes formats n in binary units: 512B, 1.5KiB, 50.0MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// pathHint is what a missing path in the sandbox gets: where to look.
const pathHint = "list what is there with 'boxkite files ls DIR' (relative paths are in /workspace)"

// pathNotFound reports whether err is the sidecar's answer to a path
// that is not there (not a sandbox that is gone, whose not_found names it).
func pathNotFound(err error) bool {
	e, ok := errors.AsType[*api.Error](err)
	return ok && e.Code == api.CodeNotFound && (strings.HasPrefix(e.Message, "Directory not found: ") || strings.HasPrefix(e.Message, "File not found: "))
}

// withPathHint adds pathHint to a not-found error without a hint.
func withPathHint(err error) error {
	if e, ok := errors.AsType[*api.Error](err); ok && e.Code == api.CodeNotFound && e.Hint == "" {
		return &hintError{err: err, hint: pathHint}
	}
	return err
}

func newFilesViewCmd(app *App) *cobra.Command {
	var (
		ref        string
		start, end int
		out        outputFlags
	)
	cmd := &cobra.Command{
		Use:        "view PATH",
		SuggestFor: []string{"cat"},
		Short:      "Print a text file of the sandbox, or some of its lines",
		Long: `Print a text file of the sandbox (up to 100 KiB are shown), or the lines
--start-line to --end-line (1-based, inclusive). A directory lists its names.
Binary files and files over 25 MiB are refused: copy them out with files cp.`,
		Example: "  boxkite files view app/main.py\n  boxkite files view log.txt --start-line 100 --end-line 120",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			req := api.ViewRequest{Path: args[0]}
			ranged := cmd.Flags().Changed("start-line") || cmd.Flags().Changed("end-line")
			if ranged {
				if start < 1 || (end != -1 && end < start) {
					return usageErrorf(helpHint(cmd), "--start-line must be at least 1 and --end-line at least --start-line (or -1 for the end)")
				}
				req.ViewRange = []int{start, end}
			}
			c, sb, err := target(cmd.Context(), app, ref, false)
			if err != nil {
				return err
			}
			res, err := c.View(cmd.Context(), sb.ID, req)
			if err != nil {
				return withPathHint(fmt.Errorf("view %s: %w", args[0], err))
			}
			if asJSON {
				return out.write(app.IO, res)
			}
			if res.IsDirectory {
				if len(res.Entries) == 0 { // as files ls says it, not silence
					fmt.Fprintf(app.IO.ErrOut, "%s is an empty directory; create a file with 'boxkite files create PATH'\n", args[0])
				}
				for _, name := range res.Entries {
					fmt.Fprintln(app.IO.Out, name)
				}
				return nil
			}
			content := res.Content
			// A range comes without its final newline; a whole file is
			// printed exactly as it is, like cat.
			if ranged && content != "" && !strings.HasSuffix(content, "\n") {
				content += "\n"
			}
			_, err = io.WriteString(app.IO.Out, content)
			return err
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().IntVar(&start, "start-line", 1, "first line to print (1-based)")
	cmd.Flags().IntVar(&end, "end-line", -1, "last line to print (-1: the end)")
	out.register(cmd, api.ViewResult{})
	pageable(cmd)
	return cmd
}

func newFilesCreateCmd(app *App) *cobra.Command {
	var (
		ref, content, contentFile string
		out                       outputFlags
	)
	cmd := &cobra.Command{
		Use:     "create PATH (--content TEXT | --content-file FILE | < FILE)",
		Aliases: []string{"write"},
		Short:   "Create or overwrite a text file in the sandbox",
		Long: `Create or overwrite a text file in the sandbox, creating its directories.
The text comes from --content, --content-file or piped stdin, up to 10 MiB;
copy binary or larger files with files cp.`,
		Example: `  boxkite files create notes.txt --content 'hello'
  boxkite files create app/main.py --content-file main.py
  echo 'print(1)' | boxkite files create hello.py`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			text, err := createContent(cmd, app.IO, content, contentFile)
			if err != nil {
				return err
			}
			req := api.FileCreateRequest{Path: args[0], Content: text}
			if err := api.FileBodyFits(req); err != nil {
				return &hintError{err: err, hint: "copy large files with 'boxkite files cp', which streams them"}
			}
			c, sb, err := target(cmd.Context(), app, ref, true)
			if err != nil {
				return err
			}
			res, err := c.WriteFile(cmd.Context(), sb.ID, req)
			if err != nil {
				return fmt.Errorf("create %s: %w", args[0], err)
			}
			if asJSON {
				return out.write(app.IO, res)
			}
			verb := "wrote"
			if res.Created {
				verb = "created"
			}
			fmt.Fprintf(app.IO.ErrOut, "%s %s (%d bytes)\n", verb, res.Path, res.Size)
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().StringVar(&content, "content", "", "the file's `text`")
	cmd.Flags().StringVar(&contentFile, "content-file", "", "read the text from local `FILE` (- for stdin)")
	out.register(cmd, api.FileCreateResult{})
	return cmd
}

// createContent picks the text of files create from its flags or stdin.
func createContent(cmd *cobra.Command, stdio IO, content, file string) (string, error) {
	var r io.Reader
	switch {
	case cmd.Flags().Changed("content") && file != "":
		return "", usageErrorf(helpHint(cmd), "give --content or --content-file, not both")
	case cmd.Flags().Changed("content"):
		return content, nil
	case file != "" && file != "-":
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	case stdio.InTTY || stdio.In == nil:
		return "", usageErrorf(helpHint(cmd), "give the text with --content or --content-file, or pipe it in")
	default:
		r = stdio.In
	}
	b, err := io.ReadAll(io.LimitReader(r, api.MaxFileContent+1))
	if err != nil {
		return "", fmt.Errorf("read content: %w", err)
	}
	if len(b) > api.MaxFileContent {
		return "", &hintError{
			err:  fmt.Errorf("the content is larger than %d MiB", api.MaxFileContent>>20),
			hint: "copy large or binary files with 'boxkite files cp'",
		}
	}
	return string(b), nil
}

func newFilesEditCmd(app *App) *cobra.Command {
	var (
		ref        string
		req        api.StrReplaceRequest
		replaceAll bool
		out        outputFlags
	)
	cmd := &cobra.Command{
		Use:   "edit PATH --old TEXT --new TEXT [--replace-all]",
		Short: "Replace text in a file of the sandbox",
		Long: `Replace --old with --new in a file of the sandbox. --old must occur exactly
once unless --replace-all is given; when it does not occur at all, nothing
changes and edit fails.`,
		Example: "  boxkite files edit app.py --old 'DEBUG = True' --new 'DEBUG = False'",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if req.OldStr == "" || !cmd.Flags().Changed("new") {
				return usageErrorf(helpHint(cmd), "give the text to replace with --old (not empty) and its replacement with --new")
			}
			req.Path, req.ReplaceAll = args[0], replaceAll
			c, sb, err := target(cmd.Context(), app, ref, false)
			if err != nil {
				return err
			}
			res, err := c.StrReplace(cmd.Context(), sb.ID, req)
			if err != nil {
				return fmt.Errorf("edit %s: %w", args[0], err)
			}
			if asJSON {
				if err := out.write(app.IO, res); err != nil {
					return err
				}
			}
			if !res.Replaced {
				return &hintError{
					err:  fmt.Errorf("--old text not found in %s; nothing changed", res.Path),
					hint: "check the text with 'boxkite files view', whitespace included",
				}
			}
			if !asJSON {
				fmt.Fprintf(app.IO.ErrOut, "replaced %d %s in %s\n", res.Occurrences, plural(res.Occurrences, "occurrence"), res.Path)
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().StringVar(&req.OldStr, "old", "", "the `text` to replace")
	cmd.Flags().StringVar(&req.NewStr, "new", "", "the replacement `text`")
	cmd.Flags().BoolVar(&replaceAll, "replace-all", false, "replace every occurrence")
	out.register(cmd, api.StrReplaceResult{})
	return cmd
}

// plural is word, or its plural for n other than 1: "es" after s, x, ch
// or sh ("processes"), "ies" for a "y" after a consonant ("entries"),
// else "s".
func plural(n int, word string) string {
	switch {
	case n == 1:
		return word
	case strings.HasSuffix(word, "s"), strings.HasSuffix(word, "x"), strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "sh"):
		return word + "es"
	case strings.HasSuffix(word, "y") && len(word) > 1 && !strings.ContainsRune("aeiou", rune(word[len(word)-2])):
		return word[:len(word)-1] + "ies"
	}
	return word + "s"
}

func newFilesRmCmd(app *App) *cobra.Command {
	var (
		ref              string
		recursive, force bool
	)
	cmd := &cobra.Command{
		Use:     "rm PATH...",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove files (and with -r, directories) from the sandbox",
		Example: "  boxkite files rm notes.txt\n  boxkite files rm -r build/",
		Args:    usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			words := []string{"rm"}
			if recursive {
				words = append(words, "-r")
			}
			if force {
				words = append(words, "-f")
			}
			words = append(words, "--")
			for _, a := range args {
				p := sandboxPath(a)
				if isSandboxRoot(p) {
					return usageErrorf("remove what is inside it instead, e.g. with 'boxkite exec'", "refusing to remove %s, a root of the sandbox", p)
				}
				words = append(words, p)
			}
			c, sb, err := target(cmd.Context(), app, ref, false)
			if err != nil {
				return err
			}
			res, err := c.Exec(cmd.Context(), sb.ID, api.ExecRequest{Command: shellJoin(words)})
			if err != nil {
				return fmt.Errorf("remove: %w", err)
			}
			if res.ExitCode != 0 {
				msg := strings.TrimSpace(res.Stderr)
				if msg == "" {
					msg = fmt.Sprintf("rm exited with %d", res.ExitCode)
				}
				err := errors.New(msg)
				if strings.Contains(msg, "No such file or directory") {
					return &notFoundError{err: err, hint: pathHint}
				}
				if strings.Contains(msg, "Is a directory") {
					return &hintError{err: err, hint: "remove directories with -r"}
				}
				return err
			}
			for _, a := range args {
				fmt.Fprintf(app.IO.ErrOut, "removed %s\n", sandboxPath(a))
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove directories and their contents")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "ignore missing files")
	return cmd
}
