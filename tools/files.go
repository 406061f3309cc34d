package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// pathHelp is the part of the file tools' descriptions that says which paths work.
const pathHelp = "Relative paths are under /workspace; /tmp and /mnt/user-data/outputs are writable too, /mnt/skills and /mnt/user-data/uploads read-only."

func fileCreateTool() Tool {
	return Tool{
		Name:        "file_create",
		Description: "Create a text file in the sandbox with the given content, replacing it if it exists; missing parent directories are created. " + pathHelp,
		Schema: object(
			strParam("path", "Path of the file to write.").req(),
			strParam("content", "The complete content of the file.").req(),
		),
		Handler: runFileCreate,
	}
}

// runFileCreate writes a file. Unlike the reference it accepts empty
// content: creating an empty __init__.py is an ordinary thing to do.
func runFileCreate(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if msg := decode("file_create", args, &in); msg != "" {
		return msg, nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return "Error: path must not be empty", nil
	}
	req := api.FileCreateRequest{Path: in.Path, Content: in.Content}
	if err := api.FileBodyFits(req); err != nil {
		return "Error: " + err.Error() + "\nHint: write the file in parts: file_create with the first part, then append the rest in smaller pieces with " + shellTool(ctx) + " (cat >> FILE)", nil
	}
	res, err := sb.WriteFile(ctx, req)
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	return fmt.Sprintf("Created file: %s (%d bytes)", orPath(res.Path, in.Path), res.Size), nil
}

// shellTool is the tool that runs a command for the agent calling: exec
// in MCP's set, bash_tool in this package's own.
func shellTool(ctx context.Context) string {
	if serves(ctx, "exec") {
		return "exec"
	}
	return "bash_tool"
}

// orPath is the sandbox's name for a path when it gave one, else the agent's.
func orPath(virt, asked string) string {
	if virt != "" {
		return virt
	}
	return asked
}

const (
	viewDefaultEnd = 100
	// truncatedMark ends /view content cut at api.MaxViewOutput.
	truncatedMark = "\n... (truncated)"
)

// isImage reports whether a path names an image by its extension.
func isImage(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico":
		return true
	}
	return false
}

func viewTool() Tool {
	return Tool{
		Name: "view",
		Description: "Show lines of a text file in the sandbox, numbered, or list a directory. " +
			"Shows lines start_line to end_line (default 1 to 100; end_line -1 means to the end of the file); output is capped at 100 KiB. " + pathHelp,
		Schema: object(
			strParam("path", "Path of the file or directory.").req(),
			intParam("start_line", "First line to show, 1-based (default 1).", 1, 1, 0).noMax(),
			intParam("end_line", "Last line to show, inclusive (default 100, or 100 lines from a start_line past 100); -1 shows to the end of the file.", viewDefaultEnd, -1, 0).noMax(),
		),
		Handler: runView,
	}
}

// runView always sends the line range, so the header and the lines agree
// (reference §15.2: its defaults sent no range, showed the whole file and
// claimed "lines 1-100").
func runView(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Path  string `json:"path"`
		Start int    `json:"start_line"`
		End   *int   `json:"end_line"`
	}{Start: 1}
	if msg := decode("view", args, &in); msg != "" {
		return msg, nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return "Error: path must not be empty", nil
	}
	in.Start = max(in.Start, 1)
	end := viewDefaultEnd
	switch {
	case in.End != nil:
		end = *in.End
	case in.Start > viewDefaultEnd:
		// The default window moves with start_line; the reference's fixed
		// end 100 would refuse every start_line past it.
		end = in.Start + viewDefaultEnd - 1
	}
	if end < -1 || end == 0 {
		end = -1
	}
	if end != -1 && end < in.Start {
		return fmt.Sprintf("Error: end_line %d is before start_line %d", end, in.Start), nil
	}
	if isImage(in.Path) {
		return fmt.Sprintf("Error: %s is an image; view shows text. Use bash_tool (e.g. `file`, `identify`) to inspect it or present_files to hand it to the user.", in.Path), nil
	}
	p := in.Path
	req := api.ViewRequest{Path: p, ViewRange: []int{in.Start, end}}
	res, err := sb.View(ctx, req)
	if n := normalizeSpaces(p); isNotFound(err) && n != p {
		// Names copied from macOS carry U+202F and friends where the agent
		// will type a space; the file may well have the plain-space name.
		req.Path = n
		if r2, err2 := sb.View(ctx, req); err2 == nil {
			res, err, p = r2, nil, n
		}
	}
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if res.IsDirectory {
		if len(res.Entries) == 0 {
			return fmt.Sprintf("Directory: %s\n\n(empty)", p), nil
		}
		return fmt.Sprintf("Directory: %s\n\n%s", p, strings.Join(res.Entries, "\n")), nil
	}
	if res.Lines == 0 {
		return "File is empty: " + p, nil
	}
	if in.Start > res.Lines {
		return fmt.Sprintf("Error: start_line %d is past the end of %s (%d lines)", in.Start, p, res.Lines), nil
	}
	last := end
	if last == -1 || last > res.Lines {
		last = res.Lines
	}
	content, truncated := cutMark(res.Content)
	var b strings.Builder
	fmt.Fprintf(&b, "File: %s (lines %d-%d of %d)\n", p, in.Start, last, res.Lines)
	for i, line := range strings.Split(content, "\n") {
		fmt.Fprintf(&b, "%6d\t%s\n", in.Start+i, line)
	}
	if truncated {
		b.WriteString("... (output truncated at 100 KiB; view a smaller range)\n")
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// cutMark strips the sidecar's truncation mark from view content. Only a
// mark after a full 100 KiB counts (less up to 3 bytes, the sidecar cuts
// on a rune boundary), so a file that merely ends in that text is shown as is.
func cutMark(content string) (string, bool) {
	body, ok := strings.CutSuffix(content, truncatedMark)
	if !ok || len(body) < api.MaxViewOutput-3 {
		return content, false
	}
	return body, true
}

// normalizeSpaces replaces Unicode space characters with ASCII spaces.
func normalizeSpaces(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u00a0', '\u2000', '\u2001', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006',
			'\u2007', '\u2008', '\u2009', '\u200a', '\u202f', '\u205f', '\u3000':
			return ' '
		}
		return r
	}, s)
}

const strReplaceMaxOld = 100 << 10

func strReplaceTool() Tool {
	return Tool{
		Name: "str_replace",
		Description: "Edit a text file in the sandbox by replacing old_str with new_str. old_str must match the file exactly, " +
			"whitespace and indentation included, and appear exactly once; include surrounding lines to make it unique. " + pathHelp,
		Schema: object(
			strParam("path", "Path of the file to edit.").req(),
			strParam("old_str", "The exact text to replace; must appear exactly once in the file.").req(),
			strParam("new_str", "The text to put in its place (may be empty to delete old_str).").req(),
		),
		Handler: runStrReplace,
	}
}

func runStrReplace(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Path   string `json:"path"`
		OldStr string `json:"old_str"`
		NewStr string `json:"new_str"`
	}
	if msg := decode("str_replace", args, &in); msg != "" {
		return msg, nil
	}
	switch {
	case strings.TrimSpace(in.Path) == "":
		return "Error: path must not be empty", nil
	case in.OldStr == "":
		return "Error: old_str must not be empty", nil
	case in.OldStr == in.NewStr:
		return "Error: old_str and new_str are the same; nothing would change", nil
	case len(in.OldStr) > strReplaceMaxOld:
		return "Error: old_str is longer than 100 KiB; replace smaller pieces, or rewrite the file with file_create", nil
	}
	res, err := sb.StrReplace(ctx, api.StrReplaceRequest{Path: in.Path, OldStr: in.OldStr, NewStr: in.NewStr})
	if e, ok := asAPIError(err); ok && e.Code == api.CodeBadRequest && strings.HasPrefix(e.Message, "old_str appears ") {
		// old_str matched more than once. The sidecar's hint mentions
		// replace_all, which this tool does not offer. Its other 400s (a
		// directory, a path outside the roots) keep their own hints.
		return apiErrorTextHint(e, "include more surrounding lines in old_str so it matches exactly once."), nil
	}
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	p := orPath(res.Path, in.Path)
	if !res.Replaced || res.Occurrences == 0 {
		return fmt.Sprintf("Error: old_str not found in %s\nHint: view the file and copy the exact text, including whitespace and indentation.", p), nil
	}
	if res.Occurrences == 1 {
		return "Replaced 1 occurrence in " + p, nil
	}
	return fmt.Sprintf("Replaced %d occurrences in %s", res.Occurrences, p), nil
}

func presentFilesTool() Tool {
	return Tool{
		Name: "present_files",
		Description: "Hand files from the sandbox to the user: each is copied into /mnt/user-data/outputs (by its base name) " +
			"and offered for download. Use it for deliverables: reports, images, archives.",
		Schema: object(
			listParam("paths", "Paths of the files to present.").req(),
		),
		Handler: runPresentFiles,
	}
}

func runPresentFiles(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Paths []string `json:"paths"`
	}
	if msg := decode("present_files", args, &in); msg != "" {
		return msg, nil
	}
	if len(in.Paths) == 0 {
		return "Error: paths must name at least one file", nil
	}
	pr, ok := sb.(Presenter)
	if !ok {
		return unsupported("presenting files"), nil
	}
	res, err := pr.PresentFiles(ctx, api.PresentFilesRequest{Filepaths: in.Paths})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	byName := make(map[string]api.PresentedFile, len(res.Files))
	for _, f := range res.Files {
		byName[path.Base(f.FilePath)] = f
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Presented %d of %d files:", len(res.Files), len(in.Paths))
	for _, p := range in.Paths {
		name := path.Base(strings.ReplaceAll(p, `\`, "/"))
		if f, ok := byName[name]; ok {
			fmt.Fprintf(&b, "\n- **%s** (%d bytes): Ready for download", name, f.Size)
			delete(byName, name)
			continue
		}
		fmt.Fprintf(&b, "\n- %s: File not found or not synced", p)
	}
	return b.String(), nil
}

func lsTool() Tool {
	return Tool{
		Name:        "ls",
		Description: "List the entries of a sandbox directory: directories end with /, files show their size. " + pathHelp,
		Schema: object(
			strParam("path", "The directory to list (default \"/\", the workspace).").dflt("/"),
		),
		Handler: runLs,
	}
}

func runLs(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Path string `json:"path"`
	}{Path: "/"}
	if msg := decode("ls", args, &in); msg != "" {
		return msg, nil
	}
	if in.Path == "" {
		in.Path = "/"
	}
	res, err := sb.List(ctx, api.LsRequest{Path: in.Path})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Directory: %s\n", in.Path)
	if len(res.Entries) == 0 {
		b.WriteString("\n(empty)")
	}
	shown := writeListing(&b, len(res.Entries), func(i int) string {
		e := res.Entries[i]
		// The sidecar already ends directory paths with "/"; the reference
		// added another one (§4.1 "…//" quirk).
		if e.IsDir {
			return strings.TrimSuffix(e.Path, "/") + "/"
		}
		return fmt.Sprintf("%s  (%d bytes)", e.Path, e.Size)
	})
	if shown < len(res.Entries) {
		fmt.Fprintf(&b, "\n\n(listing cut at 100 KiB: %d of %d entries shown -- list a subdirectory, or find files with glob and a narrower pattern)",
			shown, len(res.Entries))
	}
	return b.String(), nil
}

// maxListingText bounds the text of an ls or glob answer, as view's
// content is bounded (api.MaxViewOutput): a 10,000-entry directory would
// give the agent some 330 KB.
const maxListingText = api.MaxViewOutput

// writeListing writes line(i) for i below n, each after a newline, while
// b stays within maxListingText, and returns how many it wrote.
func writeListing(b *strings.Builder, n int, line func(int) string) int {
	for i := range n {
		l := line(i)
		if b.Len()+1+len(l) > maxListingText {
			return i
		}
		b.WriteString("\n" + l)
	}
	return n
}

func globTool() Tool {
	return Tool{
		Name:        "glob",
		Description: "Find files in the sandbox whose paths match a glob pattern, searching recursively under path; ** spans directories (e.g. **/*.py). " + pathHelp,
		Schema: object(
			strParam("pattern", "The glob pattern, e.g. *.go or src/**/*.ts.").req(),
			strParam("path", "The directory to search under (default \"/\", the workspace).").dflt("/"),
		),
		Handler: runGlob,
	}
}

func runGlob(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}{Path: "/"}
	if msg := decode("glob", args, &in); msg != "" {
		return msg, nil
	}
	if in.Pattern == "" {
		return "Error: pattern must not be empty", nil
	}
	if in.Path == "" {
		in.Path = "/"
	}
	res, err := sb.Glob(ctx, api.GlobRequest{Pattern: in.Pattern, Path: in.Path})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if len(res.Matches) == 0 {
		return fmt.Sprintf("No files matching '%s' under %s", in.Pattern, in.Path), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Matches for '%s' under %s:\n", in.Pattern, in.Path)
	shown := writeListing(&b, len(res.Matches), func(i int) string { return res.Matches[i].Path })
	switch {
	case shown < len(res.Matches):
		first := ""
		if res.Truncated {
			first = "the first "
		}
		fmt.Fprintf(&b, "\n\n(listing cut at 100 KiB: %d of %s%d matches shown -- narrow the pattern or the path)", shown, first, len(res.Matches))
	case res.Truncated:
		b.WriteString("\n\n(results truncated -- narrow the pattern or the path)")
	}
	return b.String(), nil
}

func grepTool() Tool {
	return Tool{
		Name: "grep",
		Description: "Search the text files under a sandbox directory for lines matching a regular expression (RE2 syntax) " +
			"and list them as path:line: text. Narrow the files with glob (e.g. *.py). " + pathHelp,
		Schema: object(
			strParam("pattern", "The regular expression to search for.").req(),
			strParam("path", "The directory or file to search (default \"/\", the workspace).").dflt("/"),
			strParam("glob", "Only search files whose name or path matches this glob, e.g. *.py."),
			intParam("max_matches", "Stop after this many matching lines (default 500, max 5000).", api.DefaultGrepMatches, 1, api.MaxGrepMatches),
		),
		Handler: runGrep,
	}
}

func runGrep(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		MaxMatches int    `json:"max_matches"`
	}{Path: "/", MaxMatches: api.DefaultGrepMatches}
	if msg := decode("grep", args, &in); msg != "" {
		return msg, nil
	}
	if in.Pattern == "" {
		return "Error: pattern must not be empty", nil
	}
	if in.Path == "" {
		in.Path = "/"
	}
	req := api.GrepRequest{Pattern: in.Pattern, Path: in.Path, Glob: in.Glob, MaxMatches: clamp(in.MaxMatches, 1, api.MaxGrepMatches)}
	res, err := sb.Grep(ctx, req)
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if len(res.Matches) == 0 {
		if res.Error != "" {
			return "Error: " + res.Error, nil
		}
		where := in.Path
		if in.Glob != "" {
			where += fmt.Sprintf(" in files matching '%s'", in.Glob)
		}
		return fmt.Sprintf("No matches for '%s' under %s", in.Pattern, where), nil
	}
	lines := make([]string, len(res.Matches))
	for i, m := range res.Matches {
		lines[i] = fmt.Sprintf("%s:%d: %s", m.Path, m.Line, cutLine(m.Text))
	}
	out := strings.Join(lines, "\n")
	if res.Error != "" {
		out += "\n\nError: " + res.Error
	}
	if res.Truncated {
		out += fmt.Sprintf("\n\n(results truncated -- raise max_matches (max %d) or narrow path or glob)", api.MaxGrepMatches)
	}
	return out, nil
}

// grepMaxLine caps the text shown of one matching line: a minified file's
// single line would otherwise fill the agent's context 500 times over.
const grepMaxLine = 500

// cutLine shortens s to grepMaxLine bytes on a rune boundary, marking the cut.
func cutLine(s string) string {
	if len(s) <= grepMaxLine {
		return s
	}
	cut := grepMaxLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}
